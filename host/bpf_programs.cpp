#include "host/bpf_programs.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "host/owned_fd.h"

namespace kq::host {
namespace {

const ::btf_type* skipModifiers(const host::BtfView* btf, uint32_t& id) {
  const ::btf_type* t = btf->type(id);
  while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
    id = t->type;
    t = btf->type(id);
  }
  return t;
}

BpfProgramParam describeParam(const host::BtfView* btf, uint32_t prog_type, const char* name, uint32_t type_id) {
  BpfProgramParam p;
  p.name = name ? name : "";
  const ::btf_type* t = skipModifiers(btf, type_id);
  if (!t) return p;
  if (btf_is_int(t) || btf_is_enum(t) || btf_is_enum64(t)) {
    p.kind = BpfProgramParam::Kind::Integer;
    p.size = t->size;
    p.is_signed = btf_is_int(t) ? (btf_int_encoding(t) & BTF_INT_SIGNED) != 0 : btf_kflag(t);
    return p;
  }
  if (!btf_is_ptr(t)) return p;
  uint32_t pointee_id = t->type;
  const ::btf_type* pointee = skipModifiers(btf, pointee_id);
  if (pointee_id == 0) {
    // The verifier treats a `void *` argument as a number.
    p.kind = BpfProgramParam::Kind::Integer;
    return p;
  }
  const char* struct_name = pointee && btf_is_struct(pointee) ? btf->name(pointee->name_off) : nullptr;
  if (struct_name && kernelContextStruct(prog_type, struct_name)) {
    p.kind = BpfProgramParam::Kind::Context;
    p.type_name = struct_name;
    return p;
  }
  p.kind = BpfProgramParam::Kind::Pointer;
  return p;
}

/// The program's main function (the one at instruction 0), typed by its BTF.
void readFunction(int fd, const bpf_prog_info& info, BpfProgram& out) {
  if (info.btf_id == 0 || info.nr_func_info == 0) return;
  std::vector<bpf_func_info> funcs(info.nr_func_info);
  bpf_prog_info more{};
  more.nr_func_info = info.nr_func_info;
  more.func_info_rec_size = sizeof(bpf_func_info);
  more.func_info = reinterpret_cast<uintptr_t>(funcs.data());
  uint32_t len = sizeof more;
  if (bpf_obj_get_info_by_fd(fd, &more, &len) != 0) return;
  if (more.func_info_rec_size != sizeof(bpf_func_info)) return;
  ::btf* loaded = btf__load_from_kernel_by_id(info.btf_id);
  if (!loaded) return;
  Result<std::unique_ptr<BtfView>> view = BtfView::copyOf(loaded);
  btf__free(loaded);
  if (!view) return;
  const BtfView* btf = view->get();
  for (const bpf_func_info& f : funcs) {
    if (f.insn_off != 0) continue;
    const ::btf_type* func = btf->type(f.type_id);
    if (!func || !btf_is_func(func)) break;
    const ::btf_type* proto = btf->type(func->type);
    if (!proto || !btf_is_func_proto(proto)) break;
    out.function = btf->name(func->name_off);
    const btf_param* params = btf_params(proto);
    for (uint16_t i = 0; i < btf_vlen(proto); ++i) {
      out.params.push_back(describeParam(btf, info.type, btf->name(params[i].name_off), params[i].type));
    }
    uint32_t ret_id = proto->type;
    const ::btf_type* ret = skipModifiers(btf, ret_id);
    if (ret && (btf_is_int(ret) || btf_is_enum(ret))) {
      out.return_size = ret->size;
      out.return_signed = btf_is_int(ret) ? (btf_int_encoding(ret) & BTF_INT_SIGNED) != 0 : true;
    }
    break;
  }
}

}  // namespace

Result<std::vector<BpfProgram>> loadedBpfPrograms() {
  std::vector<BpfProgram> out;
  uint32_t id = 0;
  for (;;) {
    if (bpf_prog_get_next_id(id, &id) != 0) {
      if (errno == ENOENT) break;
      return Error{fmt::format("cannot list the loaded BPF programs: {}{}", std::strerror(errno),
                               errno == EPERM ? " (listing them needs root, or CAP_SYS_ADMIN)" : "")};
    }
    OwnedFd fd(bpf_prog_get_fd_by_id(id));
    if (fd.fd < 0) continue;  // unloaded since
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd.fd, &info, &len) != 0) continue;
    BpfProgram p;
    p.id = info.id;
    p.name = info.name;
    p.type = info.type;
    const char* type_name = libbpf_bpf_prog_type_str(static_cast<bpf_prog_type>(info.type));
    p.type_name = type_name ? type_name : fmt::format("type {}", info.type);
    for (uint8_t byte : info.tag) p.tag += fmt::format("{:02x}", byte);
    readFunction(fd.fd, info, p);
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<std::string_view> kernelContextStruct(uint32_t prog_type, std::string_view uapi_struct) {
  // include/linux/bpf_types.h: each program type's context and what the kernel passes.
  struct Context {
    uint32_t type;
    std::string_view uapi;
    std::string_view kernel;
  };
  static constexpr Context kContexts[] = {
      {BPF_PROG_TYPE_SOCKET_FILTER, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_SCHED_CLS, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_SCHED_ACT, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_XDP, "xdp_md", "xdp_buff"},
      {BPF_PROG_TYPE_CGROUP_SKB, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_CGROUP_SOCK, "bpf_sock", "sock"},
      {BPF_PROG_TYPE_CGROUP_SOCK_ADDR, "bpf_sock_addr", "bpf_sock_addr_kern"},
      {BPF_PROG_TYPE_LWT_IN, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_LWT_OUT, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_LWT_XMIT, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_LWT_SEG6LOCAL, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_SOCK_OPS, "bpf_sock_ops", "bpf_sock_ops_kern"},
      {BPF_PROG_TYPE_SK_SKB, "__sk_buff", "sk_buff"},
      {BPF_PROG_TYPE_SK_MSG, "sk_msg_md", "sk_msg"},
      {BPF_PROG_TYPE_FLOW_DISSECTOR, "__sk_buff", "bpf_flow_dissector"},
      {BPF_PROG_TYPE_PERF_EVENT, "bpf_perf_event_data", "bpf_perf_event_data_kern"},
      {BPF_PROG_TYPE_CGROUP_SYSCTL, "bpf_sysctl", "bpf_sysctl_kern"},
      {BPF_PROG_TYPE_CGROUP_SOCKOPT, "bpf_sockopt", "bpf_sockopt_kern"},
      {BPF_PROG_TYPE_SK_REUSEPORT, "sk_reuseport_md", "sk_reuseport_kern"},
      {BPF_PROG_TYPE_SK_LOOKUP, "bpf_sk_lookup", "bpf_sk_lookup_kern"},
      {BPF_PROG_TYPE_CGROUP_DEVICE, "bpf_cgroup_dev_ctx", "bpf_cgroup_dev_ctx"},
  };
  for (const Context& c : kContexts) {
    if (c.type == prog_type && c.uapi == uapi_struct) return c.kernel;
  }
  return std::nullopt;
}

const Verdicts* verdictsOf(uint32_t prog_type) {
  // include/uapi/linux/bpf.h's enum xdp_action and enum sk_action, pkt_cls.h's TC_ACT_*.
  static const Verdicts kXdp{"xdp_action",
                             {{0, "XDP_ABORTED"}, {1, "XDP_DROP"}, {2, "XDP_PASS"}, {3, "XDP_TX"}, {4, "XDP_REDIRECT"}}};
  static const Verdicts kTc{"tc_action",
                            {{-1, "TC_ACT_UNSPEC"}, {0, "TC_ACT_OK"}, {1, "TC_ACT_RECLASSIFY"}, {2, "TC_ACT_SHOT"},
                             {3, "TC_ACT_PIPE"}, {4, "TC_ACT_STOLEN"}, {5, "TC_ACT_QUEUED"}, {6, "TC_ACT_REPEAT"},
                             {7, "TC_ACT_REDIRECT"}, {8, "TC_ACT_TRAP"}}};
  static const Verdicts kSk{"sk_action", {{0, "SK_DROP"}, {1, "SK_PASS"}}};
  switch (prog_type) {
    case BPF_PROG_TYPE_XDP: return &kXdp;
    case BPF_PROG_TYPE_SCHED_CLS:
    case BPF_PROG_TYPE_SCHED_ACT: return &kTc;
    case BPF_PROG_TYPE_SK_SKB:
    case BPF_PROG_TYPE_SK_MSG:
    case BPF_PROG_TYPE_SK_REUSEPORT:
    case BPF_PROG_TYPE_SK_LOOKUP: return &kSk;
    default: return nullptr;
  }
}

std::string tracedParams(const BpfProgram& program) {
  std::string params;
  for (const BpfProgramParam& p : program.params) {
    std::string type;
    switch (p.kind) {
      case BpfProgramParam::Kind::Integer: type = fmt::format("{}{}", p.is_signed ? "s" : "u", p.size * 8); break;
      case BpfProgramParam::Kind::Context:
        type = fmt::format("struct {} *", kernelContextStruct(program.type, p.type_name).value_or(p.type_name));
        break;
      case BpfProgramParam::Kind::Pointer: type = "void * /* not readable by tracing */"; break;
      case BpfProgramParam::Kind::Other: type = "? /* not readable by tracing */"; break;
    }
    bool star = !type.empty() && type.back() == '*';
    params += fmt::format("{}{}{}{}", params.empty() ? "" : ", ", type, star ? "" : " ", p.name);
  }
  return params;
}

std::string tracedReturn(const BpfProgram& program) {
  std::string ret = "void";
  if (const Verdicts* verdicts = verdictsOf(program.type)) {
    ret = fmt::format("enum {}", verdicts->enum_name);
  } else if (program.return_size) {
    ret = fmt::format("{}{}", program.return_signed ? "s" : "u", program.return_size * 8);
  }
  return ret;
}

std::string tracedSignature(const BpfProgram& program) {
  return fmt::format("{} {}({})", tracedReturn(program), program.displayName(), tracedParams(program));
}

}  // namespace kq::host
