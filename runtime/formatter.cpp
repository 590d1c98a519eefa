#include "runtime/formatter.h"
#include "runtime/packet_view.h"

#include <arpa/inet.h>

#include <algorithm>

#include <cstring>
#include <ctime>
#include <vector>

#include <fmt/format.h>
#include <fmt/printf.h>
#include <nlohmann/json.hpp>

#include "runtime/printed.h"
#include "runtime/symbols.h"
#include "runtime/type_dump.h"
#include "runtime/user_symbols.h"
#include "runtime/wall_clock.h"

namespace kq::runtime {

uint64_t readU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

int64_t readSigned(const uint8_t* p) { return static_cast<int64_t>(readU64(p)); }

std::string clockText(int64_t wall_ns, ClockPrecision precision) {
  time_t seconds = static_cast<time_t>(wall_ns / 1'000'000'000);
  struct tm tm;
  localtime_r(&seconds, &tm);
  int64_t frac = wall_ns % 1'000'000'000;
  switch (precision) {
    case ClockPrecision::Seconds:
      return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
    case ClockPrecision::Milliseconds:
      return fmt::format("{:02}:{:02}:{:02}.{:03}", tm.tm_hour, tm.tm_min, tm.tm_sec, frac / 1'000'000);
    case ClockPrecision::Microseconds:
      return fmt::format("{:02}:{:02}:{:02}.{:06}", tm.tm_hour, tm.tm_min, tm.tm_sec, frac / 1000);
  }
  return "";
}

std::string stringText(const uint8_t* p, size_t size, bool mark_cut) {
  std::string out;
  size_t i = 0;
  for (; i < size && p[i]; ++i) {
    unsigned char c = p[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  // A string that fills its field (the read keeps a NUL at the end) was most likely longer
  // than kq kept: say so (`str(p, n)` keeps more).
  if (mark_cut && size > 0 && i + 1 >= size) out += "…";
  return out;
}

const std::string* tableName(const FieldLayout& f, const uint8_t* p) {
  auto it = f.names.find(readSigned(p));
  return it == f.names.end() ? nullptr : &it->second;
}

namespace {

using Json = nlohmann::ordered_json;

/// `comm` fields: the kernel's own 16 bytes, never cut by kq.
constexpr uint32_t kCommBytes = 16;

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

/// A stack's frames, innermost first, without the tracing machinery's own frames on top.
std::vector<std::string> stackFrames(const FieldLayout& f, const uint8_t* p) {
  std::vector<std::string> frames;
  for (uint32_t i = 0; i + 8 <= f.size; i += 8) {
    uint64_t a = readU64(p + i);
    if (!a) break;
    std::string frame = f.kind == FieldKind::KernelStack ? kernelSymbol(a) : userSymbol(a);
    if (frames.empty() && f.kind == FieldKind::KernelStack && isTracingFrame(frame)) continue;
    frames.push_back(std::move(frame));
  }
  return frames;
}

/// A stack on one line, outermost frame first, `;` between (the folded form flame graph
/// tools read): how a stack shows as a table's key.
std::string foldedStack(const FieldLayout& f, const uint8_t* p) {
  std::vector<std::string> frames = stackFrames(f, p);
  std::string out;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) out += (out.empty() ? "" : ";") + *it;
  return out;
}

std::string ipv4Text(const uint8_t* p) { return fmt::format("{}.{}.{}.{}", p[0], p[1], p[2], p[3]); }

std::string ipv6Text(const uint8_t* p) {
  char text[INET6_ADDRSTRLEN] = {};
  return inet_ntop(AF_INET6, p, text, sizeof text) ? text : "?";
}

/// ntop(family, addr): whether the address is IPv6, as its family says (AF_INET6).
bool isIpv6Address(const uint8_t* p) { return readU64(p) == AF_INET6; }

std::string ipAddressText(const uint8_t* p) {
  return isIpv6Address(p) ? ipv6Text(p + 8) : ipv4Text(p + 8);
}

/// A scalar field as text (stacks and records are shown apart).
std::string scalarText(const FieldLayout& f, const uint8_t* p, TypeDumper& types) {
  switch (f.kind) {
    case FieldKind::Signed: return std::to_string(readSigned(p));
    case FieldKind::Unsigned: return std::to_string(readU64(p));
    case FieldKind::Hex: return fmt::format("0x{:x}", readU64(p));
    case FieldKind::Bool: return readU64(p) ? "true" : "false";
    case FieldKind::Enum: return types.enumText(f, readSigned(p));
    case FieldKind::String: return stringText(p, f.size, /*mark_cut=*/f.size > kCommBytes);
    case FieldKind::Pointer: return fmt::format("0x{:x}", readU64(p));
    case FieldKind::Symbol: return kernelSymbol(readU64(p));
    case FieldKind::UserSymbol: return userSymbol(readU64(p));
    case FieldKind::Errno: return errnoName(readSigned(p));
    case FieldKind::Ipv4: return ipv4Text(p);
    case FieldKind::Ipv6: return ipv6Text(p);
    case FieldKind::IpAddress: return ipAddressText(p);
    case FieldKind::KernelStack:
    case FieldKind::UserStack: return foldedStack(f, p);
    case FieldKind::File: return fileText(f.path);
    case FieldKind::StringList: return stringListText(p, f.size, f.separator);
    case FieldKind::Buffer: return bufferText(p, f.size);
    case FieldKind::WallTime: return wallTimeText(f.format, static_cast<int64_t>(readU64(p)) + bootOffset());
    case FieldKind::Table: {
      const std::string* name = tableName(f, p);
      return name ? *name : std::to_string(readSigned(p));
    }
    case FieldKind::Record:
    case FieldKind::Format: break;
  }
  return "";
}

std::string withoutTrailingSpaces(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

/// fmt("%s:%d", a, b): each directive takes the next argument field, shown as it would be
/// by itself (`%x` in hex); `%%` is a percent sign.
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

/// One conversion of a `fmt` (`%d`, `%-8s`, `%08x`), as C's printf prints it: integers
/// at their C type's width, flags and widths honoured.
std::string convert(std::string spec, char conversion, const FieldLayout& arg, const uint8_t* p,
                    TypeDumper& types) {
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
    return fmt::sprintf(spec, scalarText(arg, p, types));
  } catch (const fmt::format_error&) {
    return scalarText(arg, p, types);
  }
}

std::string formatText(const FieldLayout& f, const std::vector<FieldLayout>& fields,
                       const uint8_t* record, TypeDumper& types) {
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
    std::string text = convert(spec, conversion, arg, record + arg.offset, types);
    // An IPv6 address followed by a port is written in brackets (RFC 5952, section 6):
    // `[::1]:9000`, as `fmt("%s:%d", ntop(family, addr), port)` prints it.
    bool port_follows = j + 1 < f.format.size() && f.format[j + 1] == ':';
    if (arg.kind == FieldKind::IpAddress && port_follows && isIpv6Address(record + arg.offset)) {
      text = "[" + text + "]";
    }
    out += text;
  }
  return out;
}

class TextFormatter : public Formatter {
 public:
  TextFormatter(const ProgramLayout& layout, TypeDumper& types, int64_t offset, std::ostream& out)
      : layout_(layout), types_(types), offset_(offset), out_(out), packets_(offset, out) {
    // One header for all probes when they share their columns; otherwise name=value pairs.
    // Packets are shown apart, at the end, by packet.
    for (const ProbeLayout& p : layout.probes) {
      if (!p.writes_records || p.packet) continue;
      has_events_ = true;
      std::vector<std::string> names;
      for (const FieldLayout& f : p.fields) {
        if (!f.hidden && !f.is_capture) names.push_back(f.name);
      }
      if (!columns_set_) {
        columns_ = names;
        columns_set_ = true;
      } else if (names != columns_) {
        shared_columns_ = false;
      }
      // Wide enough for tracepoint names; longer names (globs of long functions) overflow.
      constexpr size_t kMaxProbeWidth = 48;
      size_t width = p.name.size() + (layout.queries > 1 ? 2 : 0);
      probe_width_ = std::max(probe_width_, std::min(width, kMaxProbeWidth));
    }
  }

  /// With several queries, each line says which query it came from: `2:tcp_sendmsg`.
  std::string probeName(const ProbeLayout& probe) const {
    return layout_.queries > 1 ? fmt::format("{}:{}", probe.query + 1, probe.name) : probe.name;
  }

  void begin() override {
    if (!has_events_) return;  // only aggregate tables, printed apart
    std::string header = fmt::format("{:<12} {:>3} {:>7} {:<16} {:<{}}", "TIME", "CPU", "PID",
                                     "COMM", "PROBE", probe_width_);
    if (shared_columns_) {
      for (size_t i = 0; i < columns_.size(); ++i) header += "  " + columns_[i];
    }
    out_ << withoutTrailingSpaces(std::move(header)) << "\n";
  }

  void end() override { packets_.print(); }

  void event(const EventHeader& h, const ProbeLayout& probe, const uint8_t* record,
             size_t size) override {
    setCurrentProcess(h.pid);  // for usym() and ustack
    if (probe.packet) return packetEvent(h, probe, record, size);
    std::string comm = stringText(reinterpret_cast<const uint8_t*>(h.comm), sizeof h.comm);
    std::string line = fmt::format("{:<12} {:>3} {:>7} {:<16} {:<{}}",
                                   clockText(static_cast<int64_t>(h.time_ns) + offset_, ClockPrecision::Milliseconds), h.cpu,
                                   h.pid, comm, probeName(probe), probe_width_);
    std::vector<std::string> blocks;
    for (const FieldLayout& f : probe.fields) {
      if (f.hidden || f.offset + f.size > size) continue;
      const uint8_t* p = record + f.offset;
      if (f.kind == FieldKind::Record) {
        uint64_t address = f.address_field >= 0 ? readU64(record + probe.fields[f.address_field].offset) : 0;
        std::string dump = types_.recordText(f, p);
        blocks.push_back(fmt::format("{} = *(0x{:x}) {}", f.name, address, dump));
        if (!f.is_capture) line += shared_columns_ ? fmt::format("  0x{:x}", address)
                                                   : fmt::format("  {}=0x{:x}", f.name, address);
        continue;
      }
      if (f.kind == FieldKind::KernelStack || f.kind == FieldKind::UserStack) {
        std::string stack = f.name + ":";
        for (const std::string& frame : stackFrames(f, p)) stack += "\n    " + frame;
        blocks.push_back(stack);
        continue;
      }
      std::string value = f.kind == FieldKind::Format ? formatText(f, probe.fields, record, types_)
                                                       : scalarText(f, p, types_);
      if (f.is_capture) {
        blocks.push_back(fmt::format("{} = {}", f.name, value));
      } else {
        line += shared_columns_ ? "  " + value : fmt::format("  {}={}", f.name, value);
      }
    }
    out_ << withoutTrailingSpaces(std::move(line)) << "\n";
    for (const std::string& block : blocks) {
      // Indented beneath the event, as ksnoop prints arguments.
      size_t at = 0;
      while (at <= block.size()) {
        size_t nl = block.find('\n', at);
        out_ << "    " << block.substr(at, nl == std::string::npos ? std::string::npos : nl - at) << "\n";
        if (nl == std::string::npos) break;
        at = nl + 1;
      }
    }
  }

 private:
  void packetEvent(const EventHeader& h, const ProbeLayout& probe, const uint8_t* record, size_t size) {
    const PacketLayout& packet = *probe.packet;
    PacketEvent e;
    e.time_ns = h.time_ns;
    e.cpu = h.cpu;
    auto u64 = [&](int32_t field) {
      const FieldLayout& f = probe.fields[field];
      return field >= 0 && f.offset + 8 <= size ? readU64(record + f.offset) : 0;
    };
    e.site = static_cast<uint32_t>(u64(packet.site_field));
    e.is_return = packet.return_field >= 0 && u64(packet.return_field) != 0;
    if (packet.reason_field >= 0 && u64(packet.reason_field) != 0) {
      e.reason = types_.enumText(probe.fields[packet.reason_field], static_cast<int64_t>(u64(packet.reason_field)));
    }
    for (const FieldLayout& f : probe.fields) {
      if (f.hidden || f.is_capture || f.offset + f.size > size) continue;
      e.values.push_back(valueText(f, probe, record));
    }
    packets_.add(probe, packet.skb_field >= 0 ? u64(packet.skb_field) : 0, std::move(e));
  }

  /// A field as one cell: a struct as its address, a stack folded.
  std::string valueText(const FieldLayout& f, const ProbeLayout& probe, const uint8_t* record) {
    if (f.kind == FieldKind::Record) {
      return fmt::format("0x{:x}", f.address_field >= 0 ? readU64(record + probe.fields[f.address_field].offset) : 0);
    }
    if (f.kind == FieldKind::Format) return formatText(f, probe.fields, record, types_);
    return scalarText(f, record + f.offset, types_);
  }

  const ProgramLayout& layout_;
  TypeDumper& types_;
  int64_t offset_;
  std::ostream& out_;
  PacketView packets_;
  std::vector<std::string> columns_;
  bool columns_set_ = false;
  bool shared_columns_ = true;
  bool has_events_ = false;
  size_t probe_width_ = 5;
};

class JsonFormatter : public Formatter {
 public:
  JsonFormatter(const ProgramLayout& layout, TypeDumper& types, int64_t offset, std::ostream& out)
      : layout_(layout), types_(types), offset_(offset), out_(out) {}

  void begin() override {}

  void event(const EventHeader& h, const ProbeLayout& probe, const uint8_t* record,
             size_t size) override {
    setCurrentProcess(h.pid);  // for usym() and ustack
    if (probe.packet) return packetEvent(h, probe, record, size);
    Json j;
    int64_t wall = static_cast<int64_t>(h.time_ns) + offset_;
    j["time"] = clockText(wall, ClockPrecision::Microseconds);
    j["time_ns"] = wall;
    j["cpu"] = h.cpu;
    j["pid"] = h.pid;
    j["tid"] = h.tid;
    j["comm"] = stringText(reinterpret_cast<const uint8_t*>(h.comm), sizeof h.comm);
    j["probe"] = probe.name;
    if (layout_.queries > 1) j["query"] = probe.query + 1;
    for (const FieldLayout& f : probe.fields) {
      if (f.hidden || f.offset + f.size > size) continue;
      put(j, f.name, value(f, probe, record));
    }
    out_ << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }

 private:
  /// ipftrace2's fields (its timestamp is bpf_ktime_get_ns(), as here), then the query's.
  void packetEvent(const EventHeader& h, const ProbeLayout& probe, const uint8_t* record, size_t size) {
    const PacketLayout& packet = *probe.packet;
    auto u64 = [&](int32_t field) {
      return field >= 0 && probe.fields[field].offset + 8 <= size ? readU64(record + probe.fields[field].offset) : 0;
    };
    uint64_t site = u64(packet.site_field);
    Json j;
    j["packet_id"] = fmt::format("0x{:x}", u64(packet.skb_field));
    j["timestamp"] = h.time_ns;
    j["processor_id"] = h.cpu;
    j["module"] = site < packet.modules.size() ? packet.modules[site] : "";
    j["function"] = site < packet.sites.size() ? packet.sites[site] : std::to_string(site);
    j["is_return"] = packet.return_field >= 0 && u64(packet.return_field) != 0;
    if (packet.reason_field >= 0 && u64(packet.reason_field) != 0) {
      j["drop_reason"] = types_.enumText(probe.fields[packet.reason_field], static_cast<int64_t>(u64(packet.reason_field)));
    }
    if (layout_.queries > 1) j["query"] = probe.query + 1;
    for (const FieldLayout& f : probe.fields) {
      if (f.hidden || f.offset + f.size > size) continue;
      put(j, f.name, value(f, probe, record));
    }
    out_ << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }

  /// One field as JSON: numbers, strings, structs as objects, stacks as arrays.
  Json value(const FieldLayout& f, const ProbeLayout& probe, const uint8_t* record) const {
    const uint8_t* p = record + f.offset;
    switch (f.kind) {
      case FieldKind::Signed: return readSigned(p);
      case FieldKind::Unsigned: return readU64(p);
      case FieldKind::Bool: return readU64(p) != 0;
      case FieldKind::Table: {
        const std::string* name = tableName(f, p);
        return name ? Json(*name) : Json(readSigned(p));
      }
      case FieldKind::Record: {
        Json value = types_.recordJson(f, p);
        if (value.is_object() && f.address_field >= 0) {
          Json with_address;
          with_address["address"] =
              fmt::format("0x{:x}", readU64(record + probe.fields[f.address_field].offset));
          with_address.update(value);
          value = with_address;
        }
        return value;
      }
      case FieldKind::KernelStack:
      case FieldKind::UserStack: {
        Json frames = Json::array();
        for (const std::string& frame : stackFrames(f, p)) frames.push_back(frame);
        return frames;
      }
      case FieldKind::Format:
        return formatText(f, probe.fields, record, types_);
      default:
        return scalarText(f, p, types_);
    }
  }

  /// Keys are unique: a field named like the header (`select time`) or like an earlier field
  /// is written as `time_2`, unless its value is the same (`select comm`).
  static void put(Json& j, const std::string& name, Json value) {
    std::string key = name;
    for (int n = 2; j.contains(key); ++n) {
      if (j[key] == value) return;
      key = fmt::format("{}_{}", name, n);
    }
    j[key] = std::move(value);
  }

  const ProgramLayout& layout_;
  TypeDumper& types_;
  int64_t offset_;
  std::ostream& out_;
};

}  // namespace

std::string fieldText(const FieldLayout& f, const std::vector<FieldLayout>& fields,
                      const uint8_t* record, TypeDumper& types) {
  if (f.kind == FieldKind::Format) return formatText(f, fields, record, types);
  return scalarText(f, record + f.offset, types);
}

std::unique_ptr<Formatter> makeFormatter(OutputFormat format, const ProgramLayout& layout,
                                         TypeDumper& types, int64_t boot_offset_ns,
                                         std::ostream& out) {
  if (format == OutputFormat::Json) {
    return std::make_unique<JsonFormatter>(layout, types, boot_offset_ns, out);
  }
  return std::make_unique<TextFormatter>(layout, types, boot_offset_ns, out);
}

}  // namespace kq::runtime
