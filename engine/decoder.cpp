#include "engine/decoder.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include <fmt/format.h>
#include <fmt/printf.h>

#include "engine/sinks.h"
#include "runtime/printed.h"
#include "runtime/type_dump.h"

namespace kq::engine {
namespace {

bool isPacketColumn(const plan::FieldLayout& f) {
  return f.name == kPacketBytesColumn || f.name == kPacketLengthColumn || f.name == kPacketLinearColumn ||
         f.name == kPacketNetnsColumn;
}

}  // namespace

using plan::FieldKind;
using plan::FieldLayout;
using runtime::ClockPrecision;
using runtime::readSigned;
using runtime::readU64;
using runtime::stringText;

namespace {

/// `ip_rcv+0x1a` as `ip_rcv` (`ip_rcv+0x1a [mod]` as `ip_rcv [mod]`); an address stays.
std::string withoutOffset(const std::string& frame) {
  size_t plus = frame.find("+0x");
  if (plus == std::string::npos || plus == 0) return frame;
  size_t end = frame.find(' ', plus);
  return frame.substr(0, plus) + (end == std::string::npos ? "" : frame.substr(end));
}

/// Whether a kernel frame is the tracing machinery that ran kq's program (BPF itself,
/// the tracepoint or kprobe dispatch): not part of the traced code's stack.
bool isTracingFrame(const std::string& symbol) {
  for (const char* prefix : {"bpf_prog_", "bpf_trace_run", "__bpf_trace_", "bpf_trampoline_",
                             "__bpf_prog_enter", "__bpf_prog_exit", "trace_call_bpf",
                             "kprobe_perf_func", "kprobe_ftrace_handler", "perf_trace_run_bpf_submit",
                             "kprobe_multi_link_", "fprobe_", "bpf_get_stack"}) {
    if (symbol.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string ipv4Text(const uint8_t* p) { return fmt::format("{}.{}.{}.{}", p[0], p[1], p[2], p[3]); }

std::string ipv6Text(const uint8_t* p) {
  char text[INET6_ADDRSTRLEN] = {};
  return inet_ntop(AF_INET6, p, text, sizeof text) ? text : "?";
}

/// ntop(family, addr): whether the address is IPv6, as its family says (AF_INET6).
bool isIpv6Address(const uint8_t* p) { return readU64(p) == AF_INET6; }

/// The bytes a SizedBuffer field kept: its count, never past the field.
uint32_t sizedBufferBytes(const plan::FieldLayout& f, const uint8_t* p) {
  return static_cast<uint32_t>(std::min<uint64_t>(readU64(p), f.size >= 8 ? f.size - 8 : 0));
}

/// A Table field's name for the number at `p`; null when its table has none.
const std::string* tableName(const FieldLayout& f, const uint8_t* p) {
  auto it = f.names.find(readSigned(p));
  return it == f.names.end() ? nullptr : &it->second;
}

/// An integer field's value as C's printf sees it after the usual promotions: types
/// narrower than int become int (by their own signedness), `%d` of a 32-bit value reads an
/// int, of a 64-bit one a long.
int64_t signedAtWidth(const FieldLayout& f, const uint8_t* p) {
  uint64_t v = readU64(p);
  uint32_t bits = 8u * f.int_bytes;
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t sign = uint64_t{1} << (bits - 1);
  v &= (sign << 1) - 1;
  bool narrow_unsigned = f.kind == FieldKind::Unsigned && bits < 32;
  return narrow_unsigned ? static_cast<int64_t>(v) : static_cast<int64_t>((v ^ sign) - sign);
}
uint64_t unsignedAtWidth(const FieldLayout& f, const uint8_t* p) {
  uint64_t v = readU64(p);
  uint32_t bits = std::max(32u, 8u * f.int_bytes);  // narrower types promote to int
  if (f.kind == FieldKind::Signed && f.int_bytes < 4) v = static_cast<uint64_t>(signedAtWidth(f, p));
  return bits >= 64 ? v : v & ((uint64_t{1} << bits) - 1);
}

}  // namespace

std::string RecordDecoder::scalarText(const FieldLayout& f, const uint8_t* p, uint32_t pid) {
  switch (f.kind) {
    case FieldKind::Signed: return std::to_string(readSigned(p));
    case FieldKind::Unsigned: return std::to_string(readU64(p));
    case FieldKind::Hex: return fmt::format("0x{:x}", readU64(p));
    case FieldKind::Bool: return readU64(p) ? "true" : "false";
    case FieldKind::Enum: return context_.types.enumText(f, readSigned(p));
    // Cut when no NUL ends it in its bytes (`comm` always has one: never).
    case FieldKind::String: return stringText(p, f.size, /*mark_cut=*/true);
    case FieldKind::Pointer: return fmt::format("0x{:x}", readU64(p));
    case FieldKind::Symbol: return context_.symbols.kernel(readU64(p));
    case FieldKind::UserSymbol: return context_.symbols.user(pid, readU64(p));
    case FieldKind::Errno: return runtime::errnoName(readSigned(p));
    case FieldKind::SyscallReturn: return runtime::syscallReturnText(readSigned(p));
    case FieldKind::Ipv4: return ipv4Text(p);
    case FieldKind::Ipv6: return ipv6Text(p);
    case FieldKind::IpAddress: return isIpv6Address(p) ? ipv6Text(p + 8) : ipv4Text(p + 8);
    case FieldKind::KernelStack:
    case FieldKind::UserStack: {
      Value v;
      stack(f, p, pid, v);
      return v.text;
    }
    case FieldKind::Caller: return callerText(f, p);
    case FieldKind::File: return context_.files.text(f.path);
    case FieldKind::StringList: return runtime::stringListText(p, f.size, f.separator);
    case FieldKind::Buffer: return runtime::bufferText(p, f.size);
    case FieldKind::SizedBuffer: return runtime::bufferText(p + 8, sizedBufferBytes(f, p));
    case FieldKind::WallTime:
      return runtime::wallTimeText(f.format, static_cast<int64_t>(readU64(p)) + context_.boot_offset_ns);
    case FieldKind::Table: {
      const std::string* name = tableName(f, p);
      return name ? *name : std::to_string(readSigned(p));
    }
    case FieldKind::Record:
    case FieldKind::Format: break;
  }
  return "";
}

/// A stack's frames, innermost first, without the tracing machinery's own frames on top;
/// its text is the folded form flame graph tools read (outermost first, `;` between), as a
/// stack shows as a table's key.
void RecordDecoder::stack(const FieldLayout& f, const uint8_t* p, uint32_t pid, Value& out) {
  out.kind = ValueKind::Stack;
  out.addresses.clear();
  out.frames.clear();
  for (uint32_t i = 0; i + 8 <= f.size; i += 8) {
    uint64_t a = readU64(p + i);
    if (!a) break;
    std::string frame = f.kind == FieldKind::KernelStack ? context_.symbols.kernel(a)
                                                         : context_.symbols.user(pid, a);
    if (out.frames.empty() && f.kind == FieldKind::KernelStack && isTracingFrame(frame)) continue;
    out.addresses.push_back(a);
    out.frames.push_back(std::move(frame));
  }
  out.text.clear();
  for (auto it = out.frames.rbegin(); it != out.frames.rend(); ++it) {
    if (!out.text.empty()) out.text += ';';
    out.text += *it;
  }
}

std::string RecordDecoder::callerText(const FieldLayout& f, const uint8_t* p) {
  uint64_t own = readU64(p);
  bool below_tracing = false;
  for (uint32_t i = 8; i + 8 <= f.size; i += 8) {
    uint64_t a = readU64(p + i);
    if (!a) break;
    std::string frame = context_.symbols.kernel(a);
    // The machinery's frames, and code of no symbol above them (an ftrace trampoline).
    if (!below_tracing && (isTracingFrame(frame) || frame.rfind("0x", 0) == 0)) continue;
    below_tracing = true;
    if (own) {
      --own;
      continue;
    }
    return withoutOffset(frame);
  }
  return "?";
}

void RecordDecoder::keyValue(const FieldLayout& f, const std::vector<FieldLayout>& keys,
                             const uint8_t* key, Value& out) {
  value(f, keys, key, f.kind == FieldKind::UserStack ? context_.key_pid : 0, out);
  if (out.kind != ValueKind::Stack || context_.key_stack_offsets) return;
  out.text.clear();
  for (std::string& frame : out.frames) frame = withoutOffset(frame);
  for (auto it = out.frames.rbegin(); it != out.frames.rend(); ++it) {
    if (!out.text.empty()) out.text += ';';
    out.text += *it;
  }
}

/// One conversion of a `fmt` (`%d`, `%-8s`, `%08x`), as C's printf prints it: integers
/// at their C type's width, flags and widths honoured.
std::string RecordDecoder::convert(std::string spec, char conversion, const FieldLayout& arg,
                                   const uint8_t* p, uint32_t pid) {
  spec.erase(std::remove(spec.begin(), spec.end(), 'l'), spec.end());  // fmt sizes by type
  // A lookup's number with `%d`, its name with `%s`.
  bool integer = arg.kind == FieldKind::Signed || arg.kind == FieldKind::Unsigned ||
                 arg.kind == FieldKind::Hex || arg.kind == FieldKind::Bool ||
                 arg.kind == FieldKind::Pointer || arg.kind == FieldKind::Table;
  try {
    if (integer && (conversion == 'd' || conversion == 'i')) return fmt::sprintf(spec, signedAtWidth(arg, p));
    if (integer && std::strchr("uxXo", conversion)) return fmt::sprintf(spec, unsignedAtWidth(arg, p));
    if (integer && conversion == 'c') return fmt::sprintf(spec, static_cast<char>(readU64(p)));
    spec.back() = 's';
    return fmt::sprintf(spec, scalarText(arg, p, pid));
  } catch (const fmt::format_error&) {
    return scalarText(arg, p, pid);
  }
}

/// fmt("%s:%d", a, b): each directive takes the next argument field, shown as it would be
/// by itself (`%x` in hex); `%%` is a percent sign.
std::string RecordDecoder::formatText(const FieldLayout& f, const std::vector<FieldLayout>& fields,
                                      const uint8_t* record, uint32_t pid) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.format.size(); ++i) {
    char c = f.format[i];
    if (c != '%' || i + 1 == f.format.size()) {
      out += c;
      continue;
    }
    // Flags and widths (`%08x`, `%-10s`), then the conversion.
    size_t j = i + 1;
    while (j < f.format.size() && std::strchr("-+ #0123456789.l", f.format[j])) ++j;
    if (j == f.format.size()) break;
    std::string spec = f.format.substr(i, j - i + 1);
    char conversion = f.format[j];
    i = j;
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (next >= f.args.size() || f.args[next] < 0 || static_cast<size_t>(f.args[next]) >= fields.size()) {
      out += "<missing>";
      continue;
    }
    const FieldLayout& arg = fields[f.args[next++]];
    // An IPv6 address followed by a port is written in brackets (RFC 5952, section 6):
    // `[::1]:9000`, as `fmt("%s:%d", ntop(family, addr), port)` prints it; a width pads
    // the bracketed address (`%15s` gives `          [::1]:1`, never `[          ::1]`).
    bool port_follows = j + 1 < f.format.size() && f.format[j + 1] == ':';
    bool ipv6 = (arg.kind == FieldKind::IpAddress && isIpv6Address(record + arg.offset)) || arg.kind == FieldKind::Ipv6;
    if (port_follows && ipv6) {
      std::string bracketed = "[" + scalarText(arg, record + arg.offset, pid) + "]";
      spec.erase(std::remove(spec.begin(), spec.end(), 'l'), spec.end());
      spec.back() = 's';
      try {
        out += fmt::sprintf(spec, bracketed);
      } catch (const fmt::format_error&) {
        out += bracketed;
      }
      continue;
    }
    out += convert(spec, conversion, arg, record + arg.offset, pid);
  }
  return out;
}

void RecordDecoder::value(const FieldLayout& f, const std::vector<FieldLayout>& fields,
                          const uint8_t* record, uint32_t pid, Value& out) {
  const uint8_t* p = record + f.offset;
  out.cut = false;
  out.bytes.clear();
  out.i = 0;
  out.u = 0;
  switch (f.kind) {
    case FieldKind::Signed:
    case FieldKind::SyscallReturn:
      out.kind = ValueKind::Int;
      out.i = readSigned(p);
      break;
    case FieldKind::Unsigned:
    case FieldKind::Hex:
      out.kind = ValueKind::Uint;
      out.u = readU64(p);
      break;
    case FieldKind::Bool:
      out.kind = ValueKind::Bool;
      out.u = readU64(p) != 0;
      break;
    case FieldKind::Enum:
    case FieldKind::Errno:
      out.kind = ValueKind::Name;
      out.i = readSigned(p);
      break;
    case FieldKind::Table:
      out.i = readSigned(p);
      out.kind = tableName(f, p) ? ValueKind::Name : ValueKind::Int;
      break;
    case FieldKind::String:
      out.kind = ValueKind::String;
      break;
    case FieldKind::Pointer:
    case FieldKind::Symbol:
    case FieldKind::UserSymbol:
      out.kind = ValueKind::Address;
      out.u = readU64(p);
      break;
    case FieldKind::Ipv4:
      out.kind = ValueKind::IpAddress;
      out.bytes.assign(p, p + 4);
      break;
    case FieldKind::Ipv6:
      out.kind = ValueKind::IpAddress;
      out.bytes.assign(p, p + 16);
      break;
    case FieldKind::IpAddress:
      out.kind = ValueKind::IpAddress;
      out.bytes.assign(p + 8, p + (isIpv6Address(p) ? 24 : 12));
      break;
    case FieldKind::Buffer:
      out.kind = ValueKind::Bytes;
      out.bytes.assign(p, p + f.size);
      break;
    case FieldKind::SizedBuffer:
      out.kind = ValueKind::Bytes;
      out.bytes.assign(p + 8, p + 8 + sizedBufferBytes(f, p));
      break;
    case FieldKind::Record:
      out.kind = ValueKind::Record;
      out.bytes.assign(p, p + f.size);
      out.u = f.address_field >= 0 && static_cast<size_t>(f.address_field) < fields.size()
                  ? readU64(record + fields[f.address_field].offset)
                  : 0;
      out.text.clear();
      return;
    case FieldKind::KernelStack:
    case FieldKind::UserStack:
      stack(f, p, pid, out);
      return;
    case FieldKind::Format:
      out.kind = ValueKind::Text;
      out.text = formatText(f, fields, record, pid);
      return;
    case FieldKind::File:
    case FieldKind::StringList:
    case FieldKind::WallTime:
    case FieldKind::Caller:
      out.kind = ValueKind::Text;
      if (f.kind == FieldKind::WallTime) out.u = readU64(p);
      break;
  }
  out.text = scalarText(f, p, pid);
  if (f.kind == FieldKind::String) {
    out.cut = strnlen(reinterpret_cast<const char*>(p), f.size) >= f.size;
  }
}

RecordDecoder::RecordDecoder(const plan::ProgramLayout& layout, PrintContext& context)
    : layout_(layout), context_(context) {
  for (const plan::ProbeLayout& probe : layout.probes) {
    std::vector<bool>& decoded = decoded_.emplace_back();
    for (const FieldLayout& f : probe.fields) decoded.push_back(!f.hidden || isPacketColumn(f));
  }
}

const DecodedEvent* RecordDecoder::decode(const uint8_t* data, size_t size) {
  if (size < sizeof(plan::EventHeader)) return nullptr;
  DecodedEvent& e = event_;
  std::memcpy(&e.header, data, sizeof e.header);
  if (e.header.probe_id >= layout_.probes.size()) return nullptr;
  const plan::ProbeLayout& probe = layout_.probes[e.header.probe_id];
  context_.symbols.nextEvent();
  e.probe = &probe;
  e.wall_ns = static_cast<int64_t>(e.header.time_ns) + context_.boot_offset_ns;
  e.comm = stringText(reinterpret_cast<const uint8_t*>(e.header.comm), sizeof e.header.comm);
  e.probe_name = probe.name;
  if (probe.name_field >= 0 && static_cast<size_t>(probe.name_field) < probe.fields.size()) {
    const FieldLayout& f = probe.fields[probe.name_field];
    if (f.offset + 8 <= size) {
      if (const std::string* name = tableName(f, data + f.offset)) e.probe_name = *name;
    }
  }
  e.values.resize(probe.fields.size());
  for (size_t i = 0; i < probe.fields.size(); ++i) {
    const FieldLayout& f = probe.fields[i];
    if (!decoded_[e.header.probe_id][i] || f.offset + f.size > size) {
      e.values[i].kind = ValueKind::Missing;
      continue;
    }
    value(f, probe.fields, data, e.header.pid, e.values[i]);
  }
  e.packet.reset();
  if (probe.packet) {
    const plan::PacketLayout& packet = *probe.packet;
    auto u64 = [&](int32_t field) {
      return field >= 0 && static_cast<size_t>(field) < probe.fields.size() &&
                     probe.fields[field].offset + 8 <= size
                 ? readU64(data + probe.fields[field].offset)
                 : 0;
    };
    PacketFacts facts;
    facts.skb = u64(packet.skb_field);
    facts.journey = u64(packet.journey_field);
    facts.site = static_cast<uint32_t>(u64(packet.site_field));
    facts.is_return = packet.return_field >= 0 && u64(packet.return_field) != 0;
    if (packet.reason_field >= 0 && u64(packet.reason_field) != 0) {
      facts.reason = context_.types.enumText(probe.fields[packet.reason_field],
                                             static_cast<int64_t>(u64(packet.reason_field)));
    }
    if (packet.verdict_field >= 0 && u64(packet.verdict_field) != 0) {
      const plan::FieldLayout& f = probe.fields[packet.verdict_field];
      uint64_t v = u64(packet.verdict_field);
      auto name = f.names.find(static_cast<int64_t>(v));
      facts.verdict = name != f.names.end() ? name->second : std::to_string(static_cast<int32_t>(v & 0xffffffff));
    }
    e.packet = std::move(facts);
  }
  return &e;
}

}  // namespace kq::engine
