// `kq record`'s sink: every call a session makes on its sink, kept in a recording
// (record/recording_file.h) as the typed values it was handed, so that `kq replay` makes
// the same calls later, on another machine, without root, BTF or the processes: stacks and
// addresses are named, enumerators spelled and files read while the run is live. Typed
// dumps are kept as their bytes with the kernel types that print them (runtime/btf_subset.h),
// so a replay can print them as text or JSON. Losses are sampled once a second with their
// times.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "engine/print_context.h"
#include "engine/session.h"
#include "engine/sink.h"
#include "plan/portable_plan.h"
#include "record/bytes.h"
#include "record/recording_file.h"
#include "record/recording_meta.h"

namespace kq::record {

/// What a Calls block holds: a sequence of these, each followed by its data.
enum class Call : uint8_t {
  Begin = 1,
  Event = 2,     // session_codec's event
  Table = 3,     // a table
  QueryEnd = 4,  // varint query, its stats
  End = 5,
  Loss = 6,      // varint query, its stats
  Summary = 7,   // the session's result
  Error = 8,     // a string
  LostSoFar = 9,  // svarint wall-clock ns, varint query, kLostReasons varints: losses by then
};
inline constexpr uint8_t kLastCall = 9;

struct RecorderOptions {
  uint64_t max_bytes = 0;  // --max-size: the session stops when the file reaches it; 0: none
  std::ostream* err = nullptr;  // where the --max-size stop is said
  bool progress = false;        // `err` is a terminal: events, bytes and losses, as it goes
  std::function<void()> stop;        // stops the session (at --max-size)
};

class Recorder : public engine::Sink {
 public:
  /// Writes the recording's first blocks (meta, plan, types) to `writer`; an error if the
  /// file cannot be written or the types cannot be laid out.
  static Result<std::unique_ptr<Recorder>> begin(std::unique_ptr<RecordingWriter> writer,
                                                 const plan::PortablePlan& plan, RecordingMeta meta,
                                                 engine::PrintContext& context, RecorderOptions options);
  ~Recorder() override;

  /// Losses are sampled from `session`'s query handles (before it runs).
  void watch(engine::Session& session) { session_ = &session; }

  void onBegin() override;
  void onEvent(const engine::DecodedEvent& event) override;
  void onTable(const engine::Table& table) override;
  void onQueryEnd(uint32_t query, const engine::QueryStats& stats) override;
  void onEnd() override;
  void onLoss(uint32_t query, const engine::QueryStats& stats) override;
  void onSummary(const engine::SessionResult& result) override;
  void onError(const std::string& message) override;
  void flush() override;
  std::string failure() const override { return writer_->error(); }
  bool failed() const override { return !writer_->error().empty(); }

  uint64_t events() const { return events_; }
  /// The file's size, what is buffered counted as it will compress (as the blocks before did).
  uint64_t bytes() const {
    return writer_->bytes() + static_cast<uint64_t>(static_cast<double>(calls_.size()) * writer_->compression());
  }

 private:
  Recorder(std::unique_ptr<RecordingWriter> writer, const plan::ProgramLayout& layout, RecorderOptions options)
      : writer_(std::move(writer)), layout_(layout), options_(std::move(options)) {}
  void call(Call c) { calls_.u8(static_cast<uint8_t>(c)); }
  /// Writes what is buffered as a Calls block (when `force`, or when it is large or old).
  void writeCalls(bool force);
  void sampleLosses();
  /// Whether the file would hold --max-size with what is buffered; if so the session is
  /// stopped, and no more events are kept.
  void checkMax();
  void showProgress(bool last);

  std::unique_ptr<RecordingWriter> writer_;
  const plan::ProgramLayout& layout_;
  RecorderOptions options_;
  engine::Session* session_ = nullptr;
  ByteWriter calls_;
  int64_t calls_since_ns_ = 0;
  int64_t sampled_ns_ = 0;
  int64_t progress_ns_ = 0;
  std::vector<std::array<uint64_t, plan::kLostReasons>> lost_;
  uint64_t events_ = 0;
  uint64_t tables_ = 0;
  uint64_t lost_total_ = 0;
  bool stopped_at_max_ = false;
  uint64_t past_max_ = 0;  // events after --max-size was reached
};

}  // namespace kq::record
