// A recording read back: its meta, plan and types (the first three blocks), then each call
// its session made on its sink, made again on another sink (record/recorder.h wrote them).
// Everything read is checked; a file cut short or corrupted stops the replay with the byte
// of the file where it went wrong.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/diag/result.h"
#include "engine/sink.h"
#include "plan/portable_plan.h"
#include "record/recording_file.h"
#include "record/recording_meta.h"
#include "runtime/kernel_types.h"

namespace kq::record {

/// Losses as a query had counted them by a time (sampled once a second while recording).
struct LostSample {
  int64_t wall_ns = 0;
  uint32_t query = 0;
  std::array<uint64_t, plan::kLostReasons> lost{};
};

class Recording {
 public:
  static Result<std::unique_ptr<Recording>> open(const std::string& path);

  const RecordingMeta& meta() const { return meta_; }
  const plan::PortablePlan& plan() const { return plan_; }
  runtime::KernelTypes& types() { return *types_; }

  /// Makes every recorded call on `sink`, in order, once. False when the file is cut short
  /// or corrupted (error() says where); the calls before that were made.
  bool play(engine::Sink& sink);
  const std::string& error() const { return error_; }
  /// After play(): losses with their times, and the recorded total of events.
  const std::vector<LostSample>& lostSamples() const { return lost_samples_; }
  uint64_t recordedEvents() const { return recorded_events_; }
  uint64_t fileBytes() const { return reader_->offset(); }

 private:
  explicit Recording(std::unique_ptr<RecordingReader> reader) : reader_(std::move(reader)) {}
  bool playBlock(const Block& block, engine::Sink& sink);
  bool corrupted(const Block& block, size_t at, const std::string& why);

  std::unique_ptr<RecordingReader> reader_;
  RecordingMeta meta_;
  plan::PortablePlan plan_;
  std::unique_ptr<runtime::KernelTypes> types_;
  std::vector<LostSample> lost_samples_;
  uint64_t recorded_events_ = 0;
  std::string error_;
};

}  // namespace kq::record
