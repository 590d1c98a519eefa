#include "compiler/sema/record_formats.h"
#include "host/btf_file.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include <bpf/btf.h>
#include <fmt/format.h>

namespace kq::sema {
namespace {

struct SyscallArg {
  const char* declaration;  // `const char * filename`
  int is_signed;
};
struct SyscallArgs {
  const char* name;
  std::initializer_list<SyscallArg> args;
};

const SyscallArgs kSyscalls[] = {
#include "compiler/sema/syscall_args.inc"
};

const SyscallArgs* findSyscall(std::string_view name) {
  auto it = std::lower_bound(std::begin(kSyscalls), std::end(kSyscalls), name,
                             [](const SyscallArgs& s, std::string_view n) { return s.name < n; });
  return it != std::end(kSyscalls) && it->name == name ? it : nullptr;
}

/// A tracefs `format` line, which parseTracepointFormat reads.
std::string formatLine(const std::string& declaration, uint32_t offset, uint32_t size, bool is_signed) {
  return fmt::format("\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n", declaration, offset, size, is_signed ? 1 : 0);
}

bool isSigned(const btf::BtfType& type) {
  btf::BtfType resolved = type.resolved();
  const ::btf_type* t = resolved.get();
  if (!t) return false;
  if (btf_is_int(t)) return (btf_int_encoding(t) & BTF_INT_SIGNED) != 0;
  if (btf_is_enum(t) || btf_is_enum64(t)) return btf_kflag(t);
  return false;
}

}  // namespace

bool syscallInTable(std::string_view name) { return findSyscall(name) != nullptr; }

std::optional<host::TracepointFormat> syscallRecordFormat(std::string_view event) {
  bool enter = event.rfind("sys_enter_", 0) == 0;
  if (!enter && event.rfind("sys_exit_", 0) != 0) return std::nullopt;
  const SyscallArgs* call = findSyscall(event.substr(enter ? 10 : 9));
  if (!call) return std::nullopt;
  std::string text = formatLine("int __syscall_nr", 8, 4, true);
  if (enter) {
    uint32_t offset = 16;
    for (const SyscallArg& a : call->args) {
      text += formatLine(a.declaration, offset, 8, a.is_signed);
      offset += 8;
    }
  } else {
    text += formatLine("long ret", 16, 8, true);
  }
  auto format = host::parseTracepointFormat(text);
  if (!format) return std::nullopt;
  return std::move(*format);
}

std::optional<host::TracepointFormat> recordFormatFromBtf(const btf::Btf& btf, std::string_view event) {
  // An event of a DEFINE_EVENT template has its template's record. BTF does not say which
  // template an event is of: the one named by a prefix of the event's name (block_rq for
  // block_rq_issue) whose handler takes the event's arguments, else the template the
  // handler's lookup chose (sched_wakeup_template for sched_wakeup).
  std::optional<btf::Function> handler = btf.findTracepointHandler(event);
  auto takesTheEventsArguments = [&](const std::string& name) {
    std::optional<btf::Function> f = btf.findFunction("__bpf_trace_" + name);
    if (!f || !handler || f->params.size() != handler->params.size()) return false;
    for (size_t i = 0; i < f->params.size(); ++i) {
      if (f->params[i].type != handler->params[i].type) return false;
    }
    return true;
  };
  std::vector<std::string> names{std::string(event)};
  std::string prefix(event);
  for (size_t cut; (cut = prefix.rfind('_')) != std::string::npos && cut > 0;) {
    prefix.resize(cut);
    if (takesTheEventsArguments(prefix)) names.push_back(prefix);
  }
  if (handler && handler->name.rfind("__bpf_trace_", 0) == 0) names.push_back(handler->name.substr(12));
  for (std::string& name : names) name = "trace_event_raw_" + name;
  for (const std::string& name : names) {
    std::optional<btf::BtfType> record = btf.findStruct(name);
    if (!record) continue;
    const ::btf_type* t = record->get();
    std::string text;
    const ::btf_member* members = btf_members(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      const ::btf_member& m = members[i];
      std::string member = record->file->btf->name(m.name_off);
      if (member == "ent" || member == "__data" || btf_member_bitfield_size(t, i)) continue;
      uint32_t offset = btf_member_bit_offset(t, i) / 8;
      btf::BtfType type{record->file, m.type};
      if (member.rfind("__data_loc_", 0) == 0) {
        // (length << 16 | offset) of bytes after the record: a string, as tracefs says.
        text += formatLine("__data_loc char[] " + member.substr(11), offset, 4, false);
      } else if (member.rfind("__rel_loc_", 0) != 0) {
        text += formatLine(type.declaration(member), offset, static_cast<uint32_t>(type.size()), isSigned(type));
      }
    }
    if (text.empty()) return host::TracepointFormat{};
    auto format = host::parseTracepointFormat(text);
    if (format) return std::move(*format);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace kq::sema
