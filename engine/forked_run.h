// Fork isolation, the engine's option for a front end that must outlive whatever a query
// does (the REPL): the query runs in a process of its own, forked once it was checked, so
// whatever goes wrong while it compiles, loads or runs (a diagnostic, an exception, LLVM
// ending its process, a crash) ends that process, never the caller. The child inherits the
// caller's BTF, Host and checked program; its standard output and error come back through
// pipes, its events printed so far through a counter in shared memory. A front end that
// needs no isolation runs the same query in its own process (Engine::run).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "compiler/diag/result.h"
#include "engine/run_hooks.h"

namespace kq::engine {

class ForkedRun {
 public:
  /// Runs in the child with the hooks to pass to runProgram; returns its exit status once
  /// its output is flushed.
  using Body = std::function<int(const RunHooks& hooks)>;

  /// Forks a child that runs `body` in a process group of its own (the terminal's Ctrl-C
  /// reaches the session, which passes it on to the job it means) and that ends when the
  /// session does. Flush buffered output before: the child would print it again.
  static Result<std::unique_ptr<ForkedRun>> start(const Body& body);
  /// Ends the child if it still runs (SIGKILL) and reaps it.
  ~ForkedRun();
  ForkedRun(const ForkedRun&) = delete;
  ForkedRun& operator=(const ForkedRun&) = delete;

  pid_t pid() const { return pid_; }
  /// The child's standard output and error; -1 once read to their end.
  int outFd() const { return out_fd_; }
  int errFd() const { return err_fd_; }
  /// Readable when the child has attached its programs (or ended).
  int attachFd() const { return attach_fd_; }

  /// Appends what the child wrote since the last call to `out` and `err`, and notes whether
  /// it has attached; true once it has ended and everything it wrote is read (a process it
  /// started may hold its streams open: what it writes after the child's end is not waited for).
  bool collect(std::string& out, std::string& err);
  /// Whether the child said its programs are attached.
  bool attached() const { return attached_; }
  /// Events the child has printed so far.
  uint64_t events() const { return events_->load(std::memory_order_relaxed); }
  /// Sends `sig` to the child (SIGINT or SIGTERM: its session stops and detaches).
  void signal(int sig) const;
  bool finished() const { return reaped_ && out_fd_ < 0 && err_fd_ < 0; }
  /// How the child ended, once finished: "" for exit status 0, else "exit status 1",
  /// "killed by SIGSEGV".
  const std::string& ending() const { return ending_; }
  /// Its exit status once finished: 1 when a signal ended it.
  int status() const { return status_; }
  /// Whether it ended by a signal kq did not send: a bug of kq.
  bool crashed() const { return crashed_; }

 private:
  ForkedRun() = default;
  void closeFd(int& fd);
  /// Reads what is waiting on `fd`; false at its end (the fd is closed then).
  bool drain(int& fd, std::string* text);
  void noteEnding(int status);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int attach_fd_ = -1;
  bool attached_ = false;
  bool reaped_ = false;
  bool crashed_ = false;
  int status_ = 1;
  mutable bool signalled_ = false;
  std::string ending_;
  std::atomic<uint64_t>* events_ = nullptr;  // shared with the child
};

}  // namespace kq::engine
