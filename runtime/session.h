// A tracing session: reads events from the ring buffer and prints them until the user stops
// it (a signal of StopSignals, -d), every query has ended (its `for` or `limit`: its
// programs are then detached), the command started with -c exits, or the output cannot be
// written; then reports how many events were seen and how many were lost. A stop takes effect
// within about kReadSliceNs however fast events arrive.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <ostream>

#include "runtime/child_command.h"
#include "runtime/formatter.h"
#include "runtime/kernel_types.h"
#include "runtime/loader.h"
#include "runtime/query_ends.h"
#include "runtime/session_summary.h"

namespace kq::runtime {

struct SessionOptions {
  OutputFormat format = OutputFormat::Text;
  /// Each query's `for` and `limit`, by query number.
  std::vector<QueryLimits> queries;
  uint64_t duration_ns = 0;  // -d: the whole session; 0: until stopped
  const ChildCommand* child = nullptr;  // -c: stop when it exits
  pid_t traced = 0;          // -p: stop when it exits (not our child: watched with a pidfd)
  /// The running kernel's types, for typed dumps and enumerator names (may be null).
  KernelTypes* kernel_types = nullptr;
  /// Counts the events printed so far, for another process to read (the REPL's `jobs`).
  std::atomic<uint64_t>* events_printed = nullptr;
};

/// Runs under the caller's StopSignals.
SessionResult runSession(LoadedObject& object, const ProgramPlan& plan,
                         const SessionOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kq::runtime
