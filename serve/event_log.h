// Where the events of served scripts go: JSON lines (one object per event: the script, the
// host, the query's number, the time in RFC 3339 UTC and in nanoseconds, then its typed
// columns), on standard output (a journal or a container log takes them from there) or in
// a file that log shippers tail (Vector, Fluent Bit, the OpenTelemetry Collector's
// filelog receiver). A file is rotated by size: once it holds `max_bytes` it is renamed
// FILE.1 (replacing the one before) and a new FILE is begun, as those tailers expect.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>

#include "compiler/diag/result.h"

namespace kq::serve {

class EventLog {
 public:
  /// Lines to `out` (standard output).
  explicit EventLog(std::ostream& out) : out_(&out) {}
  /// Lines to the file at `path` (appended to), rotated at `max_bytes`.
  static Result<std::unique_ptr<EventLog>> open(const std::string& path, uint64_t max_bytes);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  /// Appends whole lines; thread-safe (each script's session writes from its own thread).
  void write(const std::string& lines);
  /// How many times the file was rotated.
  uint64_t rotations() const { return rotations_; }

 private:
  EventLog() = default;
  bool reopen();

  std::mutex mutex_;
  std::ostream* out_ = nullptr;
  std::string path_;
  FILE* file_ = nullptr;
  uint64_t max_bytes_ = 0;
  uint64_t bytes_ = 0;
  uint64_t rotations_ = 0;
};

}  // namespace kq::serve
