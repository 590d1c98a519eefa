// Pushing what /metrics shows to a Prometheus that cannot scrape this machine, with
// Prometheus' remote-write protocol 1.0 (https://prometheus.io/docs/specs/remote_write_spec/):
// every interval, each sample as a time series (`__name__` and its labels, sorted, plus
// `instance` and `job`) in one WriteRequest, protobuf-encoded, snappy-compressed and POSTed.
// A request that fails waits in a bounded queue and is sent again at the next interval,
// oldest first; when the queue is full the oldest is dropped and counted.
//
// The WriteRequest's three messages are encoded here (protobuf's wire format is tags,
// lengths and bytes), not with libprotobuf: a library of megabytes every kq command would
// load for three message types.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "compiler/diag/result.h"
#include "serve/exposition.h"

namespace kq::serve {

struct RemoteWriteOptions {
  std::string url;        // http://HOST:PORT/PATH
  uint64_t interval_ms = 15000;
  std::string instance;   // the `instance` label: this machine's name unless told
  std::string job = "kq";
  size_t max_pending = 32;  // requests kept for retry
};

/// `families` as a WriteRequest (uncompressed protobuf), every sample at `time_ms`.
std::string encodeWriteRequest(const std::vector<Family>& families, int64_t time_ms,
                               const std::vector<std::pair<std::string, std::string>>& extra_labels);

struct HttpTarget {
  std::string host;
  std::string port;
  std::string path;
};
/// `http://HOST[:PORT]/PATH`, or why not (https is not spoken).
Result<HttpTarget> parseHttpUrl(const std::string& url);

class RemoteWriter {
 public:
  RemoteWriter(RemoteWriteOptions options, HttpTarget target, std::function<std::vector<Family>()> families,
               std::ostream& log);

  /// Sends every interval until `stop_fd` is readable, then once more (what was counted last).
  void run(int stop_fd);

  uint64_t sent() const { return sent_; }
  uint64_t failed() const { return failed_; }
  uint64_t dropped() const { return dropped_; }
  size_t pending() const { return pending_count_; }

 private:
  void tick();
  /// POSTs one compressed request; the error, or empty.
  std::string post(const std::string& body);

  RemoteWriteOptions options_;
  HttpTarget target_;
  std::function<std::vector<Family>()> families_;
  std::ostream& log_;
  std::deque<std::string> pending_;
  std::atomic<uint64_t> sent_{0}, failed_{0}, dropped_{0};
  std::atomic<size_t> pending_count_{0};
  std::string last_error_;
};

}  // namespace kq::serve
