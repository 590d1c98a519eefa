// `kq info`: what the kernel says about a function, a type or a tracepoint.
#include <bpf/btf.h>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "compiler/sema/program.h"
#include "compiler/sema/types.h"
#include "driver/commands.h"

namespace kq::driver {

void didYouMean(Io& io, std::string_view name, const std::vector<std::string_view>& candidates) {
  if (auto close = sema::closestName(name, candidates)) {
    io.err << "note: did you mean `" << *close << "`?\n";
  }
}

namespace {

using host::Known;

std::string_view knownWord(Known k) {
  switch (k) {
    case Known::Yes: return "yes";
    case Known::No: return "no";
    case Known::Unknown: return "unknown";
  }
  return "unknown";
}

/// Spaces from column `at` to column `column` (at least one).
std::string padTo(size_t at, size_t column) { return std::string(at < column ? column - at : 1, ' '); }

/// The anonymous struct or union a member is declared with, through its arrays (`struct
/// {...} headers`, `struct {...} set[2]`, an anonymous member); the type's id 0 for any other.
btf::BtfType anonymousRecordOf(btf::BtfType type) {
  for (int depth = 0; type.id != 0 && depth < 64; ++depth) {
    const ::btf_type* raw = type.get();
    if (btf_is_mod(raw) || btf_is_type_tag(raw)) {
      type.id = raw->type;
    } else if (btf_is_array(raw)) {
      type.id = btf_array(raw)->type;
    } else {
      break;
    }
  }
  const ::btf_type* raw = type.get();
  if (type.id != 0 && btf_is_composite(raw) && raw->name_off == 0) return type;
  return {type.file, 0};
}

// pahole-style layout: one member a line with its offset and size; anonymous structs and
// unions nest, members of them too.
void printMembers(Io& io, btf::BtfType record, uint64_t base_bits, int depth) {
  const ::btf_type* raw = record.get();
  const btf_member* members = btf_members(raw);
  std::string indent(depth * 4, ' ');
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    const char* name = record.file->btf->name(members[i].name_off);
    btf::BtfType type{record.file, members[i].type};
    uint64_t bits = base_bits + btf_member_bit_offset(raw, i);
    uint32_t bitfield = btf_member_bitfield_size(raw, i);
    std::string decl = type.declaration(name ? name : "");
    btf::BtfType anonymous = anonymousRecordOf(type);
    size_t body = decl.find("{...}");
    if (anonymous.id != 0 && body != std::string::npos) {
      std::string open = decl.substr(0, body) + "{";
      io.out << indent << open << padTo(indent.size() + open.size(), 60)
             << fmt::format("/* {:5} {:5} */\n", bits / 8, type.size());
      printMembers(io, anonymous, bits, depth + 1);
      io.out << indent << "}" << decl.substr(body + 5) << ";\n";
      continue;
    }
    std::string where = bitfield ? fmt::format("/* {:3}:{:<2} {:4}b */", bits / 8, bits % 8, bitfield)
                                 : fmt::format("/* {:5} {:5} */", bits / 8, type.size());
    if (bitfield) decl += fmt::format(":{}", bitfield);
    decl += ";";
    io.out << indent << decl << padTo(indent.size() + decl.size(), 60) << where << "\n";
  }
}

int typeInfo(const std::string& what, const btf::Btf& btf, Io& io) {
  std::string tag = what.substr(0, what.find(' '));
  std::string name = what.substr(what.find(' ') + 1);
  name.erase(0, name.find_first_not_of(' '));
  auto found = tag == "struct" ? btf.findStruct(name) : tag == "union" ? btf.findUnion(name)
                                                                       : btf.findEnum(name);
  if (!found) {
    io.err << fmt::format("kq: error: the kernel has no `{} {}`\n", tag, name);
    if (tag == "struct") {
      if (auto close = sema::closestName(name, btf.structNames())) {
        io.err << "note: did you mean `struct " << *close << "`?\n";
      }
    }
    return 1;
  }
  const ::btf_type* raw = found->get();
  if (btf_is_any_enum(raw)) {
    std::string open = fmt::format("enum {} {{", name);
    io.out << open << padTo(open.size(), 60) << fmt::format("/* size {} */\n", raw->size);
    for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
      bool is64 = btf_is_enum64(raw);
      const char* n = found->file->btf->name(is64 ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off);
      int64_t value = is64 ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(raw)[i]))
                           : btf_enum(raw)[i].val;
      io.out << fmt::format("    {} = {},\n", n, value);
    }
    io.out << "};\n";
    return 0;
  }
  std::string open = fmt::format("{} {} {{", tag, name);
  io.out << open << padTo(open.size(), 60) << fmt::format("/* size {} */\n", raw->size);
  printMembers(io, *found, 0, 1);
  io.out << "};\n";
  return 0;
}

int functionInfo(const std::string& name, const btf::Btf& btf, host::KernelInfo& kernel, Io& io) {
  auto f = btf.findFunction(name);
  if (!f) {
    io.err << fmt::format("kq: error: no kernel function `{}` in {}\n", name, btf.origin());
    didYouMean(io, name, btf.functionNames(true));
    return 1;
  }
  io.out << f->prototype() << ";\n\n";
  io.out << fmt::format("  {:<14}{}\n", "defined in", f->module.empty() ? "vmlinux" : f->module);
  Known in_kallsyms = kernel.inKallsyms(f->name);
  std::string kallsyms = std::string(knownWord(in_kallsyms));
  if (in_kallsyms == Known::No) kallsyms += ": inlined into its callers or discarded; it cannot be traced";
  io.out << fmt::format("  {:<14}{}\n", "kallsyms", kallsyms);
  for (const sema::AttachMethod& m : sema::functionAttachMethods(kernel, {*f})) {
    std::string method = m.kind == sema::AttachKind::Fentry ? "fentry/fexit" : "kprobe";
    Known available = in_kallsyms == Known::No ? Known::No : m.available;
    io.out << fmt::format("  {:<14}{}{}\n", method, knownWord(available),
                          m.why.empty() ? "" : ": " + m.why);
  }
  return 0;
}

void printFields(Io& io, const host::TracepointFormat& format, std::string_view skip) {
  for (const host::TracepointField& field : format.fields) {
    if (field.name == skip) continue;
    std::string decl = fmt::format("{} {};", field.type, field.name);
    io.out << fmt::format("  {:<44}/* offset {:3}, size {} */\n", decl, field.offset, field.size);
  }
}

int tracepointInfo(const std::string& what, const btf::Btf& btf, host::KernelInfo& kernel, Io& io) {
  // tracepoint:CATEGORY:EVENT
  size_t colon = what.find(':', 11);
  if (colon == std::string::npos) {
    io.err << "kq: error: name a tracepoint as tracepoint:CATEGORY:EVENT\n";
    return 1;
  }
  std::string category = what.substr(11, colon - 11);
  std::string event = what.substr(colon + 1);
  auto handler = btf.findTracepointHandler(event);
  auto format = kernel.tracepointFormat(category, event);
  if (!handler && !format) {
    io.err << fmt::format("kq: error: no tracepoint `{}:{}` ({})\n", category, event,
                          format.error().message);
    auto events = kernel.tracepointEvents(category);
    if (events) didYouMean(io, event, {events->begin(), events->end()});
    return 1;
  }
  io.out << fmt::format("tracepoint:{}:{}\n", category, event);
  if (handler) {
    io.out << "\ntp_btf arguments (typed, from BTF):\n";
    for (size_t i = 1; i < handler->params.size(); ++i) {
      io.out << "  " << handler->params[i].type.declaration(handler->params[i].name) << ";\n";
    }
  }
  if (format) {
    io.out << fmt::format("\nrecord fields (classic tracepoint, id {}):\n", format->id);
    printFields(io, *format, "");
  } else {
    io.out << fmt::format("\nrecord fields: unknown ({})\n", format.error().message);
  }
  return 0;
}

/// `rawtracepoint:EVENT`: the handler's arguments, by the event's name alone.
int rawTracepointInfo(const std::string& event, const btf::Btf& btf, Io& io) {
  auto handler = btf.findTracepointHandler(event);
  if (!handler) {
    io.err << fmt::format("kq: error: the kernel's BTF has no tracepoint `{}`\n", event);
    std::vector<std::string> names = btf.tracepointNames();
    didYouMean(io, event, {names.begin(), names.end()});
    return 1;
  }
  io.out << fmt::format("rawtracepoint:{}\n\narguments (typed, from BTF; tp_btf):\n", event);
  for (size_t i = 1; i < handler->params.size(); ++i) {
    io.out << "  " << handler->params[i].type.declaration(handler->params[i].name) << ";\n";
  }
  return 0;
}

int syscallInfo(const std::string& name, host::KernelInfo& kernel, Io& io) {
  auto enter = kernel.tracepointFormat("syscalls", "sys_enter_" + name);
  if (!enter) {
    io.err << fmt::format("kq: error: no syscall `{}` ({})\n", name, enter.error().message);
    auto events = kernel.tracepointEvents("syscalls");
    if (events) {
      std::vector<std::string> names;
      for (const std::string& e : *events) {
        if (e.rfind("sys_enter_", 0) == 0) names.push_back(e.substr(10));
      }
      didYouMean(io, name, {names.begin(), names.end()});
    }
    return 1;
  }
  io.out << fmt::format("syscall:{}\n\narguments (tracepoint:syscalls:sys_enter_{}):\n", name, name);
  printFields(io, *enter, "__syscall_nr");
  io.out << "\nreturn value (tracepoint:syscalls:sys_exit_" << name << "):\n  long ret;\n";
  return 0;
}

}  // namespace

int runInfo(const std::string& what, const std::string& btf_path, Io& io) {
  if (what.rfind("usdt:", 0) == 0) return usdtInfo(what, io);
  auto env = io.load_kernel(btf_path);
  if (!env) {
    io.err << "kq: error: " << env.error().message << "\n";
    return 1;
  }
  return describe(what, *env, io);
}

int describe(const std::string& what, KernelEnvironment& env, Io& io) {
  for (const char* tag : {"struct ", "union ", "enum "}) {
    if (what.rfind(tag, 0) == 0) return typeInfo(what, *env.btf, io);
  }
  if (what.rfind("tracepoint:", 0) == 0) return tracepointInfo(what, *env.btf, *env.kernel, io);
  for (const char* tag : {"rawtracepoint:", "rt:"}) {
    if (what.rfind(tag, 0) == 0) return rawTracepointInfo(what.substr(what.find(':') + 1), *env.btf, io);
  }
  if (what.rfind("syscall:", 0) == 0) return syscallInfo(what.substr(8), *env.kernel, io);
  if (what.rfind("usdt:", 0) == 0) return usdtInfo(what, io);
  if (what.rfind("bpf:", 0) == 0) return bpfProgramInfo(what.substr(4), *env.kernel, io);
  return functionInfo(what, *env.btf, *env.kernel, io);
}

}  // namespace kq::driver
