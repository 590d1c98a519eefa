#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/decoder.h"
#include "engine/event_lines.h"
#include "engine/data_sink.h"
#include "engine/sinks.h"
#include "runtime/fd_output.h"
#include "runtime/packet_view.h"
#include "runtime/type_dump.h"

namespace kq::engine {
namespace {

using plan::FieldKind;
using plan::FieldLayout;
using plan::ProbeLayout;

std::string withoutTrailingSpaces(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

/// Columns a cell takes: its UTF-8 characters (fmt pads by them too), so `…` is one.
size_t columnsOf(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xc0) != 0x80;
  return n;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

/// `256 KiB`, `4 MiB`.
std::string ringSize(uint64_t bytes) {
  return bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10);
}

/// A power of two as bpftrace's histograms say it: 512, 1K, 2K, ..., 1M, 1G (of 1024).
std::string powerOfTwo(uint64_t n) {
  static const char* const kSuffixes[] = {"", "K", "M", "G", "T", "P", "E"};
  size_t suffix = 0;
  while (n >= 1024 && n % 1024 == 0 && suffix + 1 < std::size(kSuffixes)) {
    n /= 1024;
    ++suffix;
  }
  return fmt::format("{}{}", n, kSuffixes[suffix]);
}

/// A bucket's label, as bpftrace's: `(..., 0)` (negative values), `[0]`, `[1]`, `[2, 4)`,
/// `[1K, 2K)` for hist; `(..., lo)`, `[lo, lo + step)`, `[hi, ...)` for lhist.
std::string bucketLabel(const plan::AggregateSlot& s, uint32_t i) {
  if (s.kind == plan::AggregateKind::Hist) {
    auto [lo, hi] = powerOfTwoBounds(i);
    if (!lo) return "(..., 0)";
    if (!hi) return fmt::format("[{}, 16E)", powerOfTwo(*lo));  // 2^64
    if (*hi - *lo == 1) return fmt::format("[{}]", *lo);
    return fmt::format("[{}, {})", powerOfTwo(*lo), powerOfTwo(*hi));
  }
  auto [lo, hi] = bucketBounds(s, i);
  if (!lo) return fmt::format("(..., {})", *hi);
  if (!hi) return fmt::format("[{}, ...)", *lo);
  return fmt::format("[{}, {})", *lo, *hi);
}

class TextSink : public Sink {
 public:
  TextSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out, std::ostream& err,
           const TextOptions& options)
      : plan_(plan), layout_(plan.layout), context_(context), out_(out), err_(err),
        packets_(context.boot_offset_ns, out), lines_(plan.layout, options), packet_lines_(plan.layout),
        packet_view_(options.packets), full_structs_(options.full_structs) {}


  void onBegin() override {
    // Once attached. Tables are printed apart; packets as they come, and by packet at the end.
    if (packet_lines_.hasPackets() && packet_view_ != PacketView::End) out_ << packet_lines_.header() << "\n";
    if (!lines_.hasEvents()) return;
    std::string header = lines_.header();
    if (!header.empty()) out_ << header << "\n";
  }

  void onEnd() override {
    if (packet_view_ == PacketView::Live) return;
    // After the live lines, the same events by packet.
    if (packet_view_ == PacketView::Both && packets_seen_) out_ << "\n";
    packets_.print();
  }

  void onEvent(const DecodedEvent& e) override {
    const ProbeLayout& probe = *e.probe;
    if (e.packet) return packetEvent(e);
    cells_.clear();
    std::vector<std::string> blocks;
    for (size_t i = 0; i < probe.fields.size(); ++i) {
      const FieldLayout& f = probe.fields[i];
      const Value& v = e.values[i];
      if (f.hidden) continue;  // kept for another sink (`--packet-bytes`), never shown
      if (v.kind == ValueKind::Record) {
        std::string dump = full_structs_ ? context_.types.recordText(f, v.bytes.data())
                                         : context_.types.recordLine(f, v.bytes.data());
        blocks.push_back(fmt::format("{} = *(0x{:x}) {}", f.name, v.u, dump));
        if (!f.is_capture) cells_.emplace_back(f.name, fmt::format("0x{:x}", v.u));
        continue;
      }
      if (v.kind == ValueKind::Stack) {
        std::string stack = f.name + ":";
        for (const std::string& frame : v.frames) stack += "\n    " + frame;
        blocks.push_back(stack);
        continue;
      }
      if (v.kind == ValueKind::Missing) {
        if (visibleColumn(f)) cells_.emplace_back(f.name, "");  // past the end of the record
        continue;
      }
      if (f.is_capture) {
        blocks.push_back(fmt::format("{} = {}", f.name, v.text));
      } else if (visibleColumn(f)) {
        cells_.emplace_back(f.name, v.text);
      }
    }
    out_ << lines_.line(e, clockText(e.wall_ns, ClockPrecision::Milliseconds), e.probe_name, cells_) << "\n";
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

  void onTable(const Table& table) override {
    const plan::AggregateLayout& layout = *table.layout;
    if (table.events) counted_ += *table.events;
    else uncounted_tables_ = true;
    // Ticks under a second apart are told apart by their milliseconds.
    ClockPrecision precision = layout.every_ns % 1'000'000'000 ? ClockPrecision::Milliseconds : ClockPrecision::Seconds;
    std::string title = layout.every_ns ? clockText(table.wall_ns, precision) : "";
    if (layout_.queries > 1) title += (title.empty() ? "" : " ") + queryTitle(layout.query);
    if (!title.empty()) out_ << "@ " << title << "\n";
    // Scalar columns in `select` order; histograms beneath each row.
    std::vector<std::string> headers;
    std::vector<bool> numeric;
    for (const auto& [is_key, i] : layout.columns) {
      if (!is_key && isHistogram(layout.slots[i])) continue;
      headers.push_back(is_key ? layout.keys[i].name : layout.slots[i].name);
      numeric.push_back(!is_key || layout.keys[i].kind == FieldKind::Signed ||
                        layout.keys[i].kind == FieldKind::SyscallReturn ||
                        layout.keys[i].kind == FieldKind::Unsigned);
    }
    std::vector<std::vector<std::string>> cells;
    for (const TableRow& row : table.rows) {
      std::vector<std::string> line;
      for (const auto& [is_key, i] : layout.columns) {
        if (is_key) {
          line.push_back(keyText(row.keys[i]));
        } else if (!isHistogram(layout.slots[i])) {
          const AggregateValue& v = row.slots[i];
          line.push_back(!v.scalar ? "-" : v.is_unsigned ? std::to_string(static_cast<uint64_t>(*v.scalar))
                                                         : std::to_string(*v.scalar));
        }
      }
      cells.push_back(line);
    }
    std::vector<size_t> widths(headers.size());
    for (size_t c = 0; c < headers.size(); ++c) {
      widths[c] = columnsOf(headers[c]);
      for (const auto& line : cells) widths[c] = std::max(widths[c], columnsOf(line[c]));
    }
    auto emit = [&](const std::vector<std::string>& line) {
      std::string text;
      for (size_t c = 0; c < line.size(); ++c) {
        if (c) text += "  ";
        text += numeric[c] ? fmt::format("{:>{}}", line[c], widths[c]) : fmt::format("{:<{}}", line[c], widths[c]);
      }
      out_ << withoutTrailingSpaces(std::move(text)) << "\n";
    };
    if (!headers.empty()) emit(headers);
    if (table.rows.empty()) out_ << "(no events)\n";
    for (size_t r = 0; r < table.rows.size(); ++r) {
      if (!headers.empty()) emit(cells[r]);
      for (size_t s = 0; s < layout.slots.size(); ++s) {
        const plan::AggregateSlot& slot = layout.slots[s];
        if (!isHistogram(slot)) continue;
        const std::vector<uint64_t>& buckets = table.rows[r].slots[s].buckets;
        uint32_t first = slot.buckets, last = 0;
        uint64_t peak = 0;
        for (uint32_t i = 0; i < buckets.size(); ++i) {
          uint64_t n = buckets[i];
          if (!n) continue;
          first = std::min(first, i);
          last = i;
          peak = std::max(peak, n);
        }
        out_ << "  " << slot.name << (slot.unit.empty() ? "" : " (" + slot.unit + ")") << ":\n";
        for (uint32_t i = first; i <= last && first < slot.buckets; ++i) {
          uint64_t n = buckets[i];
          size_t bar = peak ? static_cast<size_t>((n * 40 + peak - 1) / peak) : 0;
          out_ << fmt::format("  {:<20} {:>10} |{:<40}|\n", bucketLabel(slot, i), n, std::string(bar, '@'));
        }
      }
    }
    if (table.left_out) {
      out_ << fmt::format("({} more {})\n", table.left_out, table.left_out == 1 ? "group" : "groups");
    }
    if (table.cut_keys) {
      // The kernel groups by the key's bytes: strings that differ past them are one group.
      out_ << fmt::format("({} {} cut at {} bytes, marked …: groups differing past that are "
                          "counted as one; str(x, n) keeps more)\n",
                          table.cut_keys, table.cut_keys == 1 ? "key was" : "keys were",
                          table.cut_at_bytes);
    }
    out_ << "\n";
    out_.flush();
  }

  void onError(const std::string& message) override { err_ << "kq: error: " << message << "\n"; }

  void onSummary(const SessionResult& result) override {
    if (result.reader_gone) return;  // `| head` took what it wanted
    sayEnding(result, err_);
    err_ << summaryText(result) << "\n";
  }

  void flush() override { out_.flush(); }
  bool failed() const override { return out_.bad(); }
  std::string failure() const override { return runtime::outputFailure(out_); }
  bool readerGone() const override { return runtime::readerGone(out_); }

 private:
  /// `query opens`, `query 2`: how tables, counts and joins name a query of several.
  std::string queryTitle(uint32_t query) const { return "query " + plan::queryLabel(layout_, query); }

  static const std::string& keyText(const Value& v) { return v.text; }

  /// Whether every probe read at an exit is a system call's (`syscall:read`).
  bool syscallsOnly() const {
    bool any = false;
    for (const ProbeLayout& p : layout_.probes) {
      if (p.name.rfind("syscall:", 0) != 0) return false;
      any = true;
    }
    return any;
  }

  void packetEvent(const DecodedEvent& e) {
    const ProbeLayout& probe = *e.probe;
    runtime::PacketEvent p;
    p.time_ns = e.header.time_ns;
    p.cpu = e.header.cpu;
    p.site = e.packet->site;
    p.is_return = e.packet->is_return;
    p.reason = e.packet->reason;
    p.verdict = e.packet->verdict;
    for (size_t i = 0; i < probe.fields.size(); ++i) {
      const Value& v = e.values[i];
      if (v.kind == ValueKind::Missing || probe.fields[i].is_capture || probe.fields[i].hidden) continue;
      // A field as one cell: a struct as its address, a stack folded.
      p.values.push_back(v.kind == ValueKind::Record ? fmt::format("0x{:x}", v.u) : v.text);
    }
    ++packets_seen_;
    if (packet_view_ != PacketView::End) {
      out_ << packet_lines_.line(e, clockText(e.wall_ns, ClockPrecision::Microseconds), p.values) << "\n";
    }
    p.skb = e.packet->skb;
    if (packet_view_ != PacketView::Live) packets_.add(probe, e.packet->journey, std::move(p));
  }

  std::string summaryText(const SessionResult& result) const {
    bool records = std::any_of(layout_.probes.begin(), layout_.probes.end(),
                               [](const ProbeLayout& p) { return p.writes_records; });
    std::string text = "kq: ";
    uint64_t ring_full = result.lostFor(plan::Lost::RingBufferFull);
    if (records) {
      text += fmt::format("{}, {} lost", plural(result.events, "event", "events"), ring_full);
      if (ring_full) {
        auto events = std::find_if(plan_.maps.begin(), plan_.maps.end(),
                                   [&](const plan::PlannedMap& m) { return m.name == plan_.events_map; });
        std::string size = events == plan_.maps.end() ? "" : ringSize(events->max_entries) + " ";
        text += fmt::format(" (the {}ring buffer was full; --buffer-size makes it larger)", size);
      }
      if (result.not_shown) {
        text += fmt::format("; {} not shown (still in the ring buffer when kq stopped: a reader "
                            "slower than the events)", result.not_shown);
      }
    }
    if (!layout_.aggregates.empty()) {
      uint64_t not_counted = result.lostFor(plan::Lost::TableFull);
      if (records) text += "; ";
      // What the tables counted (when their aggregates count events), then what they could not.
      if (!uncounted_tables_) text += fmt::format("{} counted, ", plural(counted_, "event", "events"));
      text += fmt::format("{} not counted", not_counted);
      if (not_counted) {
        uint32_t groups = 0;
        for (const plan::AggregateLayout& table : layout_.aggregates) {
          if (!table.single) groups = std::max(groups, plan::tableGroups(plan_, table));
        }
        text += fmt::format(" (a table reached {} groups; group by fewer or coarser keys, or hold more "
                            "with `config max_groups = N`)", groups);
      }
      if (uint64_t n = result.lostFor(plan::Lost::TableNoMemory)) {
        text += fmt::format("; {} not counted (the kernel had no memory ready for a new group: "
                            "tables allocate their groups as they come)",
                            plural(n, "event", "events"));
      }
    }
    // With several queries, a loss is said against the query that lost.
    if (layout_.queries > 1) {
      for (size_t q = 0; q < result.queries.size(); ++q) {
        const QueryStats& s = result.queries[q];
        uint64_t lost = s.lostFor(plan::Lost::RingBufferFull);
        uint64_t not_counted = s.lostFor(plan::Lost::TableFull) + s.lostFor(plan::Lost::TableNoMemory);
        if (!lost && !not_counted) continue;
        bool writes = std::any_of(layout_.probes.begin(), layout_.probes.end(), [&](const ProbeLayout& p) {
          return p.query == q && p.writes_records;
        });
        std::vector<std::string> parts;
        if (writes) parts.push_back(plural(s.events, "event", "events"));
        if (writes || lost) parts.push_back(fmt::format("{} lost", lost));
        if (not_counted) parts.push_back(fmt::format("{} not counted", not_counted));
        text += fmt::format("\nkq: {}: {}", queryTitle(static_cast<uint32_t>(q)), fmt::join(parts, ", "));
      }
    }
    // A packet query's losses, by where (the most first).
    for (size_t q = 0; q < result.queries.size(); ++q) {
      const auto& at = result.queries[q].lost_at;
      if (at.empty()) continue;
      constexpr size_t kShown = 8;
      std::vector<std::string> parts;
      for (size_t i = 0; i < at.size() && i < kShown; ++i) parts.push_back(fmt::format("{} {}", at[i].first, at[i].second));
      if (at.size() > kShown) parts.push_back("and " + plural(at.size() - kShown, "more site", "more sites"));
      std::string whose = layout_.queries > 1 ? fmt::format(" by {}", queryTitle(static_cast<uint32_t>(q))) : "";
      text += fmt::format("\nkq: lost{} at: {}", whose, fmt::join(parts, ", "));
    }
    if (uint64_t n = result.lostFor(plan::Lost::StashFull)) {
      text += fmt::format("\nkq: {} not kept for {} exit (too many calls were in flight at once)",
                          plural(n, "function entry was", "function entries were"),
                          n == 1 ? "its" : "their");
    }
    if (uint64_t n = result.lostFor(plan::Lost::StashMissing)) {
      // Mostly calls already under way when kq attached: nothing was lost, they were not
      // seen from their start (entries not kept are said above).
      text += fmt::format("\nkq: {} no entry seen (calls already under way when kq attached; not shown)",
                          plural(n, syscallsOnly() ? "system call exit had" : "function exit had",
                                 syscallsOnly() ? "system call exits had" : "function exits had"));
    }
    for (const JoinResult& join : result.joins) {
      // Two queries may name their joins alike: then each line says whose it is.
      bool shared_name = std::count_if(result.joins.begin(), result.joins.end(),
                                       [&](const JoinResult& j) { return j.name == join.name; }) > 1;
      std::string name = shared_name ? fmt::format("{} ({})", join.name, queryTitle(join.query)) : join.name;
      text += fmt::format("\nkq: join {}: {} kept, {} matched, {} without a match", name,
                          join.kept, join.matched, join.unmatched);
      if (join.expired) text += fmt::format(", {} older than `within`", join.expired);
      if (join.evicted) {
        text += fmt::format(", {} evicted (more were waiting than the join holds)", join.evicted);
      }
      if (join.waiting) text += fmt::format(", {} still waiting", join.waiting);
    }
    return text;
  }

  const plan::ProgramPlan& plan_;
  const plan::ProgramLayout& layout_;
  PrintContext& context_;
  std::ostream& out_;
  std::ostream& err_;
  runtime::PacketView packets_;
  EventLines lines_;
  PacketLines packet_lines_;
  PacketView packet_view_;
  bool full_structs_;
  uint64_t packets_seen_ = 0;  // packet events
  std::vector<std::pair<std::string, std::string>> cells_;
  uint64_t counted_ = 0;           // events the tables shown counted
  bool uncounted_tables_ = false;  // a table of sums, mins or maxes only: its events unknown
};

}  // namespace

void sayEnding(const SessionResult& result, std::ostream& err) {
  if (result.traced_exited) err << "kq: process " << result.traced_pid << " exited\n";
  if (!result.output_failure.empty()) {
    err << "kq: error: cannot write the output: " << result.output_failure << "\n";
  }
}

std::unique_ptr<Sink> makeTextSink(const plan::ProgramPlan& plan, PrintContext& context,
                                   std::ostream& out, std::ostream& err, const TextOptions& options) {
  return std::make_unique<TextSink>(plan, context, out, err, options);
}

std::ostream& discardedOutput() {
  struct Discard : std::streambuf {
    int overflow(int c) override { return c; }
    std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  };
  static Discard discard;
  static std::ostream nowhere(&discard);
  return nowhere;
}

std::unique_ptr<Sink> makeSummarySink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& err) {
  return std::make_unique<SummarySink>(plan, context, err);
}

std::optional<OutputFormat> outputFormat(const std::string& word) {
  if (word == "text") return OutputFormat::Text;
  if (word == "json") return OutputFormat::Json;
  if (word == "pcapng") return OutputFormat::Pcapng;
  if (word == "folded") return OutputFormat::Folded;
  if (word == "perfetto") return OutputFormat::Perfetto;
  return std::nullopt;
}

std::unique_ptr<Sink> makeSink(OutputFormat format, const plan::ProgramPlan& plan,
                               PrintContext& context, std::ostream& out, std::ostream& err,
                               const TextOptions& options) {
  switch (format) {
    case OutputFormat::Text: break;
    case OutputFormat::Json: return makeJsonSink(plan, context, out, err);
    case OutputFormat::Pcapng: return makePcapngSink(plan, context, out, err);
    case OutputFormat::Folded: return makeFoldedSink(plan, context, out, err);
    case OutputFormat::Perfetto: return makePerfettoSink(plan, context, out, err);
  }
  return makeTextSink(plan, context, out, err, options);
}

}  // namespace kq::engine
