// Tracepoints' BTF handlers. TRACE_EVENT(x) gives the kernel a FUNC `__bpf_trace_x`;
// DEFINE_EVENT(tmpl, x) gives only `__bpf_trace_tmpl` and a typedef `btf_trace_x`, a pointer
// to x's prototype (`void *__data` first), without parameter names. libbpf and the verifier
// find `tp_btf/x` through that typedef; kq takes the names from the template's handler.
#include <bpf/btf.h>

#include "host/btf_file.h"
#include "compiler/btf/btf.h"

namespace kq::btf {

namespace {

constexpr std::string_view kHandlerPrefix = "__bpf_trace_";

/// The FUNC_PROTO a `btf_trace_<event>` typedef points at.
std::optional<BtfType> typedefProto(BtfType typedef_type) {
  BtfType ptr = BtfType{typedef_type.file, typedef_type.get()->type}.resolved();
  if (ptr.isVoid() || !btf_is_ptr(ptr.get())) return std::nullopt;
  BtfType proto = BtfType{ptr.file, ptr.get()->type}.resolved();
  if (proto.isVoid() || !btf_is_func_proto(proto.get())) return std::nullopt;
  return proto;
}

/// Whether a handler's parameters have the same types as the prototype's.
bool sameParameters(const Function& handler, BtfType proto) {
  const ::btf_type* raw = proto.get();
  if (handler.params.size() != btf_vlen(raw)) return false;
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    if (handler.params[i].type.id != btf_params(raw)[i].type) return false;
  }
  return true;
}

bool sameNames(const Function& a, const Function& b) {
  if (a.params.size() != b.params.size()) return false;
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (a.params[i].name != b.params[i].name) return false;
  }
  return true;
}

size_t commonPrefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::optional<Function> Btf::findTracepointHandler(std::string_view event) const {
  if (auto handler = loadedTracepointHandler(event)) return handler;
  if (!can_load_modules_ || modules_loaded_) return std::nullopt;
  // Syscall events belong to the kernel itself and have no BTF handler: loading every
  // module's BTF to look for one would only slow `trace syscall:...` down.
  if (event.rfind("sys_enter_", 0) == 0 || event.rfind("sys_exit_", 0) == 0) return std::nullopt;
  loadModules();  // a module's tracepoint
  return loadedTracepointHandler(event);
}

std::optional<Function> Btf::loadedTracepointHandler(std::string_view event) const {
  if (auto own = find(std::string(kHandlerPrefix) + std::string(event), kFunctions, BTF_KIND_FUNC, true)) {
    return functionOf(*own, own->file == &files_.front() ? "" : own->file->name);
  }
  auto typedef_type = find("btf_trace_" + std::string(event), kTypes, BTF_KIND_TYPEDEF, true);
  if (!typedef_type) return std::nullopt;
  auto proto = typedefProto(*typedef_type);
  if (!proto || btf_vlen(proto->get()) == 0) return std::nullopt;
  return templateHandler(event, *typedef_type, *proto);
}

std::vector<std::pair<Function, uint32_t>> Btf::tracepointsTaking(std::string_view name) const {
  std::vector<std::pair<Function, uint32_t>> out;
  const host::BtfView* btf = files_.front().btf;
  for (uint32_t id = 1; id < btf->typeCount(); ++id) {
    const btf_type* t = btf->type(id);
    if (!btf_is_typedef(t)) continue;
    std::string_view typedef_name = btf->name(t->name_off);
    if (typedef_name.rfind("btf_trace_", 0) != 0) continue;
    auto proto = typedefProto(BtfType{&files_.front(), id});
    if (!proto) continue;
    Function handler;
    handler.name = std::string(typedef_name.substr(std::string_view("btf_trace_").size()));
    handler.func = BtfType{&files_.front(), id};
    handler.return_type = BtfType{proto->file, proto->get()->type};
    for (uint16_t i = 0; i < btf_vlen(proto->get()); ++i) {
      handler.params.push_back({"", BtfType{proto->file, btf_params(proto->get())[i].type}});
    }
    // (void *__data, args...): a tp_btf program's ctx[i] is args[i].
    if (auto i = parameterPointingTo(handler, name, 1, UINT32_MAX)) {
      out.emplace_back(std::move(handler), *i - 1);
    }
  }
  return out;
}

std::vector<std::string> Btf::tracepointNames() const {
  std::vector<std::string> out;
  const host::BtfView* btf = files_.front().btf;
  for (uint32_t id = 1; id < btf->typeCount(); ++id) {
    const btf_type* t = btf->type(id);
    if (!btf_is_typedef(t)) continue;
    std::string_view name = btf->name(t->name_off);
    if (name.rfind("btf_trace_", 0) == 0) out.emplace_back(name.substr(std::string_view("btf_trace_").size()));
  }
  return out;
}

// Templates of one prototype may name its parameters differently (sched_wakeup_template's
// `p`, sched_kthread_stop's `t`): the template whose name shares the longest prefix with
// the event's wins; with a tie or no template, parameters are known as argN.
Function Btf::templateHandler(std::string_view event, BtfType typedef_type, BtfType proto) const {
  std::optional<Function> best;
  size_t best_prefix = 0;
  bool tie = false;
  bool in_module = proto.file != &files_.front();
  for (std::string_view fn : matchFunctionNames(std::string(kHandlerPrefix) + "*", in_module)) {
    auto handler = findFunction(fn);
    if (!handler || handler->func.file != proto.file) continue;
    if (handler->func.get()->type != proto.id && !sameParameters(*handler, proto)) continue;
    size_t prefix = commonPrefix(fn.substr(kHandlerPrefix.size()), event);
    if (best && prefix == best_prefix) {
      tie = tie || !sameNames(*handler, *best);
    } else if (!best || prefix > best_prefix) {
      best = std::move(handler);
      best_prefix = prefix;
      tie = false;
    }
  }
  if (best && !tie) return *best;
  Function unnamed;
  unnamed.name = std::string(typedef_type.name());
  unnamed.func = typedef_type;
  unnamed.return_type = BtfType{proto.file, proto.get()->type};
  unnamed.module = proto.file == &files_.front() ? "" : proto.file->name;
  for (uint16_t i = 0; i < btf_vlen(proto.get()); ++i) {
    unnamed.params.push_back({"", BtfType{proto.file, btf_params(proto.get())[i].type}});
  }
  return unnamed;
}

}  // namespace kq::btf
