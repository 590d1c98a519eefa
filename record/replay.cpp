#include "record/replay.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "engine/sinks.h"
#include "record/recording.h"
#include "record/replay_query.h"
#include "runtime/type_dump.h"

namespace kq::record {
namespace {

/// Addresses were named while recording; a replay has no process or kernel to ask.
class NoSymbols : public engine::Symbolizer {
 public:
  std::string kernel(uint64_t address) override { return fmt::format("0x{:x}", address); }
  std::string user(uint32_t, uint64_t address) override { return fmt::format("0x{:x}", address); }
};
class NoFiles : public engine::FileReader {
 public:
  std::string text(const std::string&) override { return ""; }
};

/// Counts what a recording holds, for --info.
class CountingSink : public engine::Sink {
 public:
  void onEvent(const engine::DecodedEvent& e) override {
    ++events;
    ++by_probe[e.probe_name];
  }
  void onTable(const engine::Table&) override { ++tables; }
  void onSummary(const engine::SessionResult& r) override { result = r; }
  void onError(const std::string& m) override { errors.push_back(m); }
  uint64_t events = 0, tables = 0;
  std::map<std::string, uint64_t> by_probe;
  std::optional<engine::SessionResult> result;
  std::vector<std::string> errors;
};

const char* lostReasonText(uint32_t why) {
  switch (static_cast<plan::Lost>(why)) {
    case plan::Lost::RingBufferFull: return "the ring buffer was full";
    case plan::Lost::TableFull: return "a table was full";
    case plan::Lost::StashFull: return "no room to keep an entry for its exit";
    case plan::Lost::StashMissing: return "an exit without its entry";
    case plan::Lost::TableNoMemory: return "the kernel had no memory for a group";
  }
  return "?";
}

std::string wallText(int64_t ns) {
  time_t seconds = static_cast<time_t>(ns / 1'000'000'000);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  return fmt::format("{}.{:03} UTC", text, (ns / 1'000'000) % 1000);
}

int describe(Recording& recording, const std::string& path, std::ostream& out, std::ostream& err) {
  CountingSink counts;
  bool read_all = recording.play(counts);
  const RecordingMeta& m = recording.meta();
  const plan::ProgramLayout& layout = recording.plan().plan.layout;
  out << fmt::format("recording: {} ({} bytes, format {}){}\n", path, recording.fileBytes(), kRecordingFormat,
                     read_all ? "" : ", unreadable past byte " + std::to_string(recording.fileBytes()));
  out << fmt::format("recorded:  {} on {} (Linux {}, {}, {} CPUs, boot {}) by kq {}\n", wallText(m.started_ns),
                     m.hostname, m.kernel_release, m.machine, m.cpus, m.boot_id, m.kq_version);
  for (size_t q = 0; q < m.queries.size(); ++q) {
    out << fmt::format("query {}:   {}\n", plan::queryLabel(layout, static_cast<uint32_t>(q)), m.queries[q]);
  }
  out << fmt::format("events:    {}, tables: {}\n", counts.events, counts.tables);
  for (const plan::ProbeLayout& p : layout.probes) {
    if (!p.writes_records) continue;
    std::vector<std::string> fields = replayFieldNames(p);
    out << fmt::format("  {}: {} events; fields: {}\n", p.name, counts.by_probe[p.name], fmt::join(fields, ", "));
  }
  for (const auto& [name, n] : counts.by_probe) {
    bool listed = false;
    for (const plan::ProbeLayout& p : layout.probes) listed = listed || p.name == name;
    if (!listed) out << fmt::format("  {}: {} events\n", name, n);
  }
  if (counts.result) {
    bool any = false;
    for (uint32_t why = 0; why < plan::kLostReasons; ++why) {
      if (uint64_t n = counts.result->lost[why]) {
        out << fmt::format("lost:      {} ({})\n", n, lostReasonText(why));
        any = true;
      }
    }
    if (!any) out << "lost:      none\n";
  }
  for (const LostSample& s : recording.lostSamples()) {
    uint64_t total = 0;
    for (uint64_t n : s.lost) total += n;
    out << fmt::format("  by {}: query {} had lost {}\n", wallText(s.wall_ns), plan::queryLabel(layout, s.query), total);
  }
  if (!read_all) {
    err << "kq replay: error: " << recording.error() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int runReplay(const ReplayRequest& request, std::ostream& stdout_stream, std::ostream& err) {
  Result<std::unique_ptr<Recording>> opened = Recording::open(request.path);
  if (!opened) {
    err << "kq replay: error: " << opened.error().message << "\n";
    return 1;
  }
  Recording& recording = **opened;
  std::optional<std::ofstream> file;
  std::ostream* out = &stdout_stream;
  if (!request.output_path.empty()) {
    file.emplace(request.output_path, std::ios::binary | std::ios::trunc);
    if (!*file) {
      err << "kq replay: error: cannot write `" << request.output_path << "`\n";
      return 1;
    }
    out = &*file;
  }
  if (request.info) return describe(recording, request.path, *out, err);

  const RecordingMeta& meta = recording.meta();
  std::string format_word = request.format.value_or(meta.format);
  std::optional<engine::OutputFormat> format = engine::outputFormat(format_word);
  if (!format) {
    err << "kq replay: error: the recording was printed as `" << format_word << "`, which this kq cannot print\n";
    return 1;
  }
  engine::TextOptions text;
  std::string prefix = request.prefix.value_or(meta.prefix);
  if (!prefix.empty()) {
    std::string error;
    text.prefix = engine::parsePrefix(prefix, &error);
  }
  text.packets = engine::parsePacketView(request.packet_view.value_or(meta.packet_view)).value_or(engine::PacketView::Both);
  text.full_structs = request.structs.value_or(meta.structs) == "full";

  NoSymbols symbols;
  NoFiles files;
  runtime::TypeDumper dumper(&recording.types());
  dumper.prepare(recording.plan().plan.layout);
  engine::PrintContext context{symbols, dumper, files, meta.boot_offset_ns};
  context.key_stack_offsets = request.stack_offsets.value_or(meta.stack_offsets);

  if (!request.query.empty()) {
    return replayQuery(recording, request.query_name, request.query, *format, text, context, *out, err,
                       request.color);
  }
  std::unique_ptr<engine::Sink> sink = engine::makeSink(*format, recording.plan().plan, context, *out, err, text);
  bool read_all = recording.play(*sink);
  out->flush();
  if (!read_all) {
    err << "kq replay: error: " << recording.error() << "\n";
    return 1;
  }
  if (!sink->failure().empty() && !sink->readerGone()) return 1;
  return 0;
}

}  // namespace kq::record
