#include "record/recorder.h"

#include <fmt/format.h>

#include "engine/host.h"
#include "record/recorded_types.h"
#include "record/session_codec.h"
#include "runtime/type_dump.h"

namespace kq::record {
namespace {

/// A Calls block is written once it holds this much, or is this old: a recording cut short
/// (kq killed, the machine gone) loses at most about a second of events.
constexpr size_t kCallsBlockBytes = 1 << 20;
constexpr int64_t kCallsBlockNs = 1'000'000'000;
constexpr int64_t kLossSampleNs = 1'000'000'000;
constexpr int64_t kProgressNs = 250'000'000;

std::string sizeText(uint64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} MiB", bytes / (1024 * 1024));
}

}  // namespace

Result<std::unique_ptr<Recorder>> Recorder::begin(std::unique_ptr<RecordingWriter> writer,
                                                  const plan::PortablePlan& plan, RecordingMeta meta,
                                                  engine::PrintContext& context, RecorderOptions options) {
  meta.boot_offset_ns = context.boot_offset_ns;
  Result<std::string> types = encodeRecordedTypes(plan.plan.layout, context.types);
  if (!types) return types.error();
  if (!writer->write(BlockKind::Meta, encodeMeta(meta), false) ||
      !writer->write(BlockKind::Plan, plan::encodePlan(plan), true) ||
      !writer->write(BlockKind::Types, *types, true)) {
    return Error{writer->error()};
  }
  std::unique_ptr<Recorder> recorder(new Recorder(std::move(writer), plan.plan.layout, std::move(options)));
  recorder->lost_.resize(std::max<uint32_t>(plan.plan.layout.queries, 1));
  recorder->calls_since_ns_ = recorder->sampled_ns_ = engine::nowNs();
  return recorder;
}

Recorder::~Recorder() = default;

void Recorder::onBegin() { call(Call::Begin); }

void Recorder::onEvent(const engine::DecodedEvent& event) {
  // Past --max-size nothing more is kept (the session is stopping; what the ring buffer
  // still holds is counted, and said).
  if (stopped_at_max_) {
    ++past_max_;
    return;
  }
  call(Call::Event);
  encodeEvent(calls_, event);
  ++events_;
  if (calls_.size() >= kCallsBlockBytes) writeCalls(true);
  checkMax();
}

void Recorder::checkMax() {
  if (!options_.max_bytes || stopped_at_max_) return;
  // Room kept for what follows the stop (each query's end, the summary, the end block).
  uint64_t end_bytes = std::min<uint64_t>(4096, options_.max_bytes / 4) + kBlockHeaderBytes;
  // What is buffered fits even if it did not compress at all: go on.
  if (writer_->bytes() + calls_.size() + kBlockHeaderBytes + end_bytes < options_.max_bytes) return;
  // Compressed now, it may still fit.
  writeCalls(true);
  if (writer_->bytes() + kBlockHeaderBytes + end_bytes < options_.max_bytes) return;
  stopped_at_max_ = true;
  if (options_.stop) options_.stop();
}

void Recorder::onTable(const engine::Table& table) {
  call(Call::Table);
  encodeTable(calls_, table, static_cast<uint32_t>(table.layout - layout_.aggregates.data()));
  ++tables_;
}

void Recorder::onQueryEnd(uint32_t query, const engine::QueryStats& stats) {
  call(Call::QueryEnd);
  calls_.varint(query);
  encodeStats(calls_, stats);
}

void Recorder::onEnd() { call(Call::End); }

void Recorder::onLoss(uint32_t query, const engine::QueryStats& stats) {
  call(Call::Loss);
  calls_.varint(query);
  encodeStats(calls_, stats);
}

void Recorder::onSummary(const engine::SessionResult& result) {
  sampleLosses();
  call(Call::Summary);
  encodeResult(calls_, result);
  writeCalls(true);
  ByteWriter end;
  end.varint(events_);
  end.varint(tables_);
  for (uint64_t n : result.lost) end.varint(n);
  writer_->write(BlockKind::End, end.data(), false);
  showProgress(true);
  if (stopped_at_max_ && options_.err) {
    *options_.err << fmt::format("kq record: the recording reached --max-size ({}): stopped", sizeText(options_.max_bytes));
    if (past_max_) *options_.err << fmt::format("; {} events after it were not recorded", past_max_);
    *options_.err << "\n";
  }
}

void Recorder::onError(const std::string& message) {
  call(Call::Error);
  calls_.string(message);
}

void Recorder::flush() {
  int64_t now = engine::nowNs();
  if (now - sampled_ns_ >= kLossSampleNs) {
    sampled_ns_ = now;
    sampleLosses();
  }
  writeCalls(false);
  if (options_.progress && now - progress_ns_ >= kProgressNs) {
    progress_ns_ = now;
    showProgress(false);
  }
  checkMax();
}

void Recorder::writeCalls(bool force) {
  if (calls_.size() == 0) return;
  int64_t now = engine::nowNs();
  if (!force && calls_.size() < kCallsBlockBytes && now - calls_since_ns_ < kCallsBlockNs) return;
  writer_->write(BlockKind::Calls, calls_.data(), true);
  calls_.clear();
  calls_since_ns_ = now;
}

void Recorder::sampleLosses() {
  if (!session_) return;
  uint64_t total = 0;
  for (uint32_t q = 0; q < session_->queries() && q < lost_.size(); ++q) {
    engine::QueryStats stats = session_->query(q).stats();
    for (uint64_t n : stats.lost) total += n;
    if (stats.lost == lost_[q]) continue;
    lost_[q] = stats.lost;
    call(Call::LostSoFar);
    calls_.svarint(engine::nowNs(CLOCK_REALTIME));
    calls_.varint(q);
    for (uint64_t n : stats.lost) calls_.varint(n);
  }
  lost_total_ = total;
}

void Recorder::showProgress(bool last) {
  if (!options_.progress || !options_.err) return;
  std::ostream& out = *options_.err;
  out << fmt::format("\r\x1b[Kkq record: {} events, {}, {} lost{}", events_, sizeText(bytes()), lost_total_,
                     last ? "\n" : "");
  out.flush();
}

}  // namespace kq::record
