// The command of -c: started before the programs load, held before exec until they are
// attached, and stopped with kq whatever ends the session (Ctrl-C, -d, `for`, an error).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

namespace kq::runtime {

class ChildCommand {
 public:
  /// Starts `/bin/sh -c command` held before exec, in a process group of its own (so that
  /// stopping it stops what it started too); returns nullptr with errno set on failure.
  static std::unique_ptr<ChildCommand> start(const std::string& command);
  /// Stops the command if it still runs.
  ~ChildCommand();

  pid_t pid() const { return pid_; }
  /// Lets the command run.
  void release();
  /// Whether release() was called: the command was let run.
  bool released() const { return released_; }
  /// Whether the command has exited (it is not reaped: stop() does that).
  bool exited() const;
  /// Ends the command if it still runs (SIGTERM to its process group, SIGKILL after a short
  /// grace period), reaps it and returns its wait status; once, later calls return the same.
  int stop();
  /// Whether stop() had to signal it.
  bool stoppedByKq() const { return signalled_; }

  struct Launch;

 private:
  ChildCommand() = default;
  pid_t pid_ = 0;
  int release_fd_ = -1;
  bool released_ = false;
  bool signalled_ = false;
  std::optional<int> status_;
  std::unique_ptr<Launch> launch_;
};

/// How the command ended, for stderr ("exited with status 3", "was killed by SIGSEGV");
/// empty when it exited with 0, unless `verbose`.
std::string commandEnding(const ChildCommand& child, int status, bool verbose);

}  // namespace kq::runtime
