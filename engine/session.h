// A running program's session: reads events from the ring buffer, decodes them and hands
// them to a sink until it is cancelled, every query has ended (its `for` or `limit`, or
// its handle's stop(): its programs are then detached), the command started with -c exits,
// the traced process of -p exits, or the sink cannot take more; then counts what was seen
// and lost, per query. A stop takes effect within about kReadSliceNs however fast events
// arrive.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/cancellation.h"
#include "engine/decoder.h"
#include "engine/host.h"
#include "engine/session_result.h"
#include "engine/sink.h"
#include "plan/program_plan.h"
#include "plan/query_limits.h"
#include "runtime/child_command.h"
#include "runtime/loader.h"

namespace kq::engine {

struct SessionOptions {
  /// Each query's `for` and `limit`, by query number.
  std::vector<plan::QueryLimits> queries;
  uint64_t duration_ns = 0;  // -d: the whole session; 0: until stopped
  const runtime::ChildCommand* child = nullptr;  // -c: stop when it exits
  pid_t traced = 0;          // -p: stop when it exits (not our child: watched with a pidfd)
  /// Counts the events printed so far, for another process to read (the REPL's `jobs`).
  std::atomic<uint64_t>* events_printed = nullptr;
  bool key_stack_offsets = false;  // PrintContext::key_stack_offsets
  /// Everything left in the ring buffer when the programs are detached is handed to the
  /// sink, however much (`kq record`: recorded + lost is all the kernel made); otherwise
  /// at most kFinalRecords are, for at most kFinalReadNs, and the rest are counted.
  bool drain_at_end = false;
};

class Session;

/// One query of a running session, for whoever runs it (the REPL's `stop N`, `kq serve`).
/// Thread-safe: the session runs in another thread.
class QueryHandle {
 public:
  /// Ends the query: its programs are detached and its tables shown as at its end.
  void stop();
  /// Its counts so far (losses read from the kernel's counters now).
  QueryStats stats() const;
  uint32_t number() const { return query_; }

 private:
  friend class Session;
  QueryHandle(Session& session, uint32_t query) : session_(&session), query_(query) {}
  Session* session_;
  uint32_t query_;
};

class Session {
 public:
  Session(Host& host, runtime::LoadedObject& object, const plan::ProgramPlan& plan,
          PrintContext& context, Sink& sink, const Cancellation& cancellation,
          SessionOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Runs until the session ends (see above); once.
  SessionResult run();

  /// Query `q` (by its number in the plan).
  QueryHandle& query(uint32_t q) { return handles_.at(q); }
  size_t queries() const { return handles_.size(); }

 private:
  friend class QueryHandle;
  struct QueryState {
    std::atomic<uint64_t> events{0};
    std::atomic<bool> stop{false};
    std::atomic<bool> ended{false};
  };
  /// Query `q`'s losses, by reason, from the kernel's counters.
  std::array<uint64_t, plan::kLostReasons> lostOf(uint32_t q) const;
  /// QueryStats::lost_at of query `q`.
  std::vector<std::pair<std::string, uint64_t>> lostAt(uint32_t q) const;
  void wake();

  Host& host_;
  runtime::LoadedObject& object_;
  const plan::ProgramPlan& plan_;
  PrintContext& context_;
  Sink& sink_;
  const Cancellation& cancellation_;
  SessionOptions options_;
  std::deque<QueryState> states_;
  std::deque<QueryHandle> handles_;
  int control_fd_ = -1;  // an eventfd: a handle asked for something
};

}  // namespace kq::engine
