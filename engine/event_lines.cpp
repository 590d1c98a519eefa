#include "engine/event_lines.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

namespace kq::engine {
namespace {

using plan::FieldKind;
using plan::FieldLayout;
using plan::ProbeLayout;

/// Columns a cell takes: its UTF-8 characters, so `…` is one.
size_t columnsOf(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xc0) != 0x80;
  return n;
}

std::string padded(const std::string& text, size_t width, bool right) {
  size_t n = columnsOf(text);
  if (n >= width) return text;
  return right ? std::string(width - n, ' ') + text : text + std::string(width - n, ' ');
}

bool isNumber(const FieldLayout& f) {
  return f.kind == FieldKind::Signed || f.kind == FieldKind::Unsigned || f.kind == FieldKind::Hex ||
         f.kind == FieldKind::Pointer || f.kind == FieldKind::SyscallReturn;
}

struct PrefixName {
  const char* word;
  PrefixColumn column;
};
constexpr PrefixName kPrefixNames[] = {{"time", PrefixColumn::Time}, {"cpu", PrefixColumn::Cpu},
                                       {"pid", PrefixColumn::Pid},   {"tid", PrefixColumn::Tid},
                                       {"comm", PrefixColumn::Comm}, {"query", PrefixColumn::Query},
                                       {"probe", PrefixColumn::Probe}};

/// Wide enough for tracepoint names; longer names (globs of long functions) overflow.
constexpr size_t kMaxProbeWidth = 48;
constexpr size_t kMaxFunctionWidth = 32;  // a packet's live lines: most sites are shorter
/// A text column grows to this many characters at most; a longer cell overflows its line
/// alone (one long path does not push every later line out).
constexpr size_t kMaxTextWidth = 40;

/// How wide a column starts: its header, or the room its values usually take (a `comm` its
/// 15 characters, a 32-bit number 7 digits, as a pid).
size_t startWidth(const FieldLayout& f) {
  size_t width = columnsOf(f.name);
  if (f.kind == FieldKind::Signed || f.kind == FieldKind::Unsigned) {
    width = std::max<size_t>(width, f.int_bytes == 1 ? 3 : f.int_bytes == 2 ? 5 : 7);
  }
  if (f.kind == FieldKind::SyscallReturn) width = std::max<size_t>(width, 9);  // `-2 ENOENT`
  if (f.kind == FieldKind::String && f.size > 1) width = std::max(width, std::min<size_t>(f.size - 1, kMaxTextWidth));
  if (f.kind == FieldKind::Ipv4) width = std::max<size_t>(width, 15);
  if (f.kind == FieldKind::Table) {
    // As wide as its longest name (`caps[cap]`, a syscall glob's `probe`).
    for (const auto& [key, name] : f.names) width = std::max(width, std::min(columnsOf(name), kMaxTextWidth));
  }
  if (f.kind == FieldKind::Format) {
    // fmt("%s:%d -> %s:%d", ...): its text, and about eight characters a conversion.
    size_t text = 0, conversions = 0;
    for (size_t i = 0; i < f.format.size(); ++i) {
      if (f.format[i] != '%') {
        ++text;
      } else if (i + 1 < f.format.size() && f.format[i + 1] == '%') {
        ++text;
        ++i;
      } else {
        ++conversions;
        while (i + 1 < f.format.size() && !std::isalpha(static_cast<unsigned char>(f.format[i + 1]))) ++i;
        ++i;  // the conversion's letter
      }
    }
    width = std::max(width, std::min(text + 8 * conversions, kMaxTextWidth));
  }
  return width;
}

}  // namespace

bool visibleColumn(const FieldLayout& f) {
  bool stack = f.kind == FieldKind::KernelStack || f.kind == FieldKind::UserStack;
  return !f.hidden && !f.is_capture && !stack;
}

std::vector<PrefixColumn> defaultPrefix(const plan::ProgramLayout& layout) {
  bool all_pid = true, all_comm = true, all_probe = true;
  size_t probes = 0;
  std::map<uint32_t, size_t> probes_of;  // by query
  for (const ProbeLayout& p : layout.probes) {
    if (!p.writes_records || p.packet) continue;
    ++probes;
    ++probes_of[p.query];
    if (p.name_field >= 0) ++probes_of[p.query];  // a glob's calls, each its own name
    bool pid = false, comm = false, probe = false;
    for (const FieldLayout& f : p.fields) {
      if (!visibleColumn(f)) continue;
      pid = pid || f.name == "pid";
      comm = comm || f.name == "comm";
      probe = probe || f.name == "probe";
    }
    all_pid = all_pid && pid;
    all_comm = all_comm && comm;
    all_probe = all_probe && probe;
  }
  std::vector<PrefixColumn> out = {PrefixColumn::Time};
  if (!all_pid || !probes) out.push_back(PrefixColumn::Pid);
  if (!all_comm || !probes) out.push_back(PrefixColumn::Comm);
  if (probes_of.size() > 1) out.push_back(PrefixColumn::Query);
  if ((!all_probe || !probes) &&
      std::any_of(probes_of.begin(), probes_of.end(), [](const auto& q) { return q.second > 1; })) {
    out.push_back(PrefixColumn::Probe);
  }
  return out;
}

std::optional<std::vector<PrefixColumn>> parsePrefix(const std::string& text, std::string* error) {
  std::vector<PrefixColumn> out;
  if (text == "none") return out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string word = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    auto named = std::find_if(std::begin(kPrefixNames), std::end(kPrefixNames),
                              [&](const PrefixName& n) { return word == n.word; });
    if (named == std::end(kPrefixNames)) {
      *error = fmt::format("--prefix takes `none` or columns of time, cpu, pid, tid, comm, query and probe, "
                           "joined by commas (`time,pid`), not `{}`", text);
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), named->column) == out.end()) out.push_back(named->column);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::optional<PacketView> parsePacketView(const std::string& text) {
  if (text == "both") return PacketView::Both;
  if (text == "live") return PacketView::Live;
  if (text == "end") return PacketView::End;
  return std::nullopt;
}

EventLines::EventLines(const plan::ProgramLayout& layout, const TextOptions& options)
    : prefix_(options.prefix ? *options.prefix : defaultPrefix(layout)) {
  for (uint32_t q = 0; q < layout.queries; ++q) {
    query_labels_.push_back(plan::queryLabel(layout, q));
    query_width_ = std::max(query_width_, std::min(columnsOf(query_labels_.back()), kMaxProbeWidth));
  }
  bool set = false;
  for (const ProbeLayout& p : layout.probes) {
    if (!p.writes_records || p.packet) continue;
    has_events_ = true;
    std::vector<std::string> names;
    std::vector<bool> numeric;
    std::vector<size_t> widths;
    for (const FieldLayout& f : p.fields) {
      if (!visibleColumn(f)) continue;
      if (f.kind != plan::FieldKind::Format) formatted_only_ = false;
      names.push_back(f.name);
      numeric.push_back(isNumber(f));
      widths.push_back(startWidth(f));
    }
    if (!set) {
      names_ = names;
      numeric_ = numeric;
      widths_ = widths;
      set = true;
    } else if (names != names_) {
      shared_ = false;
    }
    if (p.name_field < 0) probe_width_ = std::max(probe_width_, std::min(p.name.size(), kMaxProbeWidth));
    if (p.name_field >= 0 && static_cast<size_t>(p.name_field) < p.fields.size()) {
      for (const auto& [key, name] : p.fields[p.name_field].names) {
        probe_width_ = std::max(probe_width_, std::min(name.size(), kMaxProbeWidth));
      }
    }
  }
}

std::string EventLines::prefix(const DecodedEvent* e, const std::string& time, const std::string& probe) {
  std::string out;
  for (PrefixColumn c : prefix_) {
    if (!out.empty()) out += ' ';
    switch (c) {
      case PrefixColumn::Time: out += padded(e ? time : "TIME", 12, false); break;
      case PrefixColumn::Cpu: out += padded(e ? std::to_string(e->header.cpu) : "CPU", 3, true); break;
      case PrefixColumn::Pid: out += padded(e ? std::to_string(e->header.pid) : "PID", 7, true); break;
      case PrefixColumn::Tid: out += padded(e ? std::to_string(e->header.tid) : "TID", 7, true); break;
      case PrefixColumn::Comm: out += padded(e ? e->comm : "COMM", 15, false); break;
      case PrefixColumn::Query: out += padded(e ? queryLabel(e->probe->query) : "QUERY", query_width_, false); break;
      case PrefixColumn::Probe: out += padded(e ? probe : "PROBE", probe_width_, false); break;
    }
  }
  return out;
}

std::string EventLines::queryLabel(uint32_t query) const {
  return query < query_labels_.size() ? query_labels_[query] : std::to_string(query + 1);
}

std::string EventLines::header() {
  // `--prefix none` and only `fmt(...)`: each line is exactly its text, as bpftrace's printf.
  if (prefix_.empty() && formatted_only_) return "";
  std::string out = prefix(nullptr, "", "");
  if (shared_) {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (!out.empty()) out += "  ";
      out += i + 1 == names_.size() ? names_[i] : padded(names_[i], widths_[i], numeric_[i]);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string EventLines::line(const DecodedEvent& e, const std::string& time, const std::string& probe,
                             const std::vector<std::pair<std::string, std::string>>& cells) {
  std::string out = prefix(&e, time, probe);
  for (size_t i = 0; i < cells.size(); ++i) {
    if (!out.empty()) out += "  ";
    const std::string& text = cells[i].second;
    if (!shared_ || i >= widths_.size()) {
      out += shared_ ? text : cells[i].first + "=" + text;
      continue;
    }
    // A column grows to its widest cell, and stays that wide: later lines line up again.
    size_t n = columnsOf(text);
    if (numeric_[i] || n <= kMaxTextWidth) widths_[i] = std::max(widths_[i], n);
    out += i + 1 == cells.size() ? text : padded(text, widths_[i], numeric_[i]);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

PacketLines::PacketLines(const plan::ProgramLayout& layout) {
  for (const ProbeLayout& p : layout.probes) {
    if (!p.packet || !p.writes_records) continue;  // an aggregate's packets print as a table
    if (!probe_) probe_ = &p;
    for (size_t i = 0; i < p.packet->sites.size(); ++i) {
      size_t width = p.packet->sites[i].size() + (p.packet->graph ? 3 : 0);
      if (i < p.packet->modules.size() && p.packet->modules[i] != "vmlinux") width += p.packet->modules[i].size() + 3;
      // At most kMaxFunctionWidth: a longer name (a module's) pushes its own line only.
      function_width_ = std::max(function_width_, std::min(width, kMaxFunctionWidth));
    }
  }
  if (!probe_) return;
  for (const FieldLayout& f : probe_->fields) {
    if (!f.hidden && !f.is_capture) widths_.push_back(startWidth(f));
  }
}

std::string PacketLines::header() const {
  std::string out = padded("TIME", 15, false) + "  " + padded("SKB", 18, false) + "  CPU  " +
                    padded("COMM", 15, false) + "  " + padded("FUNCTION", function_width_, false);
  size_t i = 0;
  for (const FieldLayout& f : probe_->fields) {
    if (f.hidden || f.is_capture) continue;
    out += "  " + padded(f.name, widths_[i++], isNumber(f));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string PacketLines::line(const DecodedEvent& e, const std::string& time, const std::vector<std::string>& values) {
  const plan::PacketLayout& layout = *e.probe->packet;
  uint32_t site = e.packet->site;
  std::string function = site < layout.sites.size() ? layout.sites[site] : fmt::format("site {}", site);
  if (site < layout.modules.size() && layout.modules[site] != "vmlinux") function += " [" + layout.modules[site] + "]";
  if (layout.graph) function = (e.packet->is_return ? "<- " : "-> ") + function;
  std::string out = padded(time, 15, false) + "  " + padded(fmt::format("0x{:x}", e.packet->skb), 18, false) + "  " +
                    padded(std::to_string(e.header.cpu), 3, true) + "  " + padded(e.comm, 15, false) + "  " +
                    padded(function, function_width_, false);
  std::vector<const FieldLayout*> shown;
  for (const FieldLayout& f : e.probe->fields) {
    if (!f.hidden && !f.is_capture) shown.push_back(&f);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    bool numeric = i < shown.size() && isNumber(*shown[i]);
    if (e.probe == probe_ && i < widths_.size()) {
      size_t n = columnsOf(values[i]);
      if (numeric || n <= kMaxTextWidth) widths_[i] = std::max(widths_[i], n);
      bool last = i + 1 == values.size() && e.packet->reason.empty() && e.packet->verdict.empty();
      // The last column is not padded out, but a number is still right-aligned under its name.
      out += "  " + (last && !numeric ? values[i] : padded(values[i], widths_[i], numeric));
    } else {
      out += "  " + values[i];
    }
  }
  if (!e.packet->reason.empty()) out += "  drop: " + e.packet->reason;
  if (!e.packet->verdict.empty()) out += "  verdict: " + e.packet->verdict;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace kq::engine
