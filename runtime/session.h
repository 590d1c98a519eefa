// A tracing session: reads events from the ring buffer and prints them until the user stops
// it (Ctrl-C, SIGTERM), every query has ended (its `for` or `limit`: its programs are then
// detached), or the command started with -c exits; then reports how many events were seen and how many were lost.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ostream>

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
  pid_t child = 0;           // -c: stop when it exits
  pid_t traced = 0;          // -p: stop when it exits (not our child: watched with a pidfd)
  /// The running kernel's types, for typed dumps and enumerator names (may be null).
  KernelTypes* kernel_types = nullptr;
};

SessionResult runSession(LoadedObject& object, const ProgramPlan& plan,
                         const SessionOptions& options, std::ostream& out, std::ostream& err);

/// A command started for -c: forked at once but held before exec until release().
class ChildCommand {
 public:
  /// Starts `/bin/sh -c command` held before exec; returns nullptr with errno set on failure.
  static std::unique_ptr<ChildCommand> start(const std::string& command);
  ~ChildCommand();

  pid_t pid() const { return pid_; }
  /// Lets the command run.
  void release();

 private:
  ChildCommand() = default;
  pid_t pid_ = 0;
  int release_fd_ = -1;
  bool released_ = false;
};

}  // namespace kq::runtime
