// A one-shot command's slow phases, watched from a thread of their own: compiling, loading
// and attaching before a session, detaching after it. A stop signal (Ctrl-C) in one of them
// is obeyed at once: nothing of kq's stays in the kernel when its process ends (every
// program, map and attachment is held by a file descriptor), so kq stops the command it
// started and exits with status 130. And a phase that lasts more than a second says what
// it is doing on a terminal, so no wait is silent.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <thread>

#include "engine/cancellation.h"
#include <cstdint>

namespace kq::driver {

class PhaseWatch {
 public:
  /// Before a session any stop request ends a phase; after it (detaching), the session's
  /// own having ended it, only a further request by a signal (a second Ctrl-C).
  enum class Stops { Any, Further };

  /// Watches `stop` from now until destroyed; says phases on standard error when
  /// `terminal` is true.
  PhaseWatch(engine::Cancellation& stop, Stops stops, bool terminal);
  ~PhaseWatch();
  PhaseWatch(const PhaseWatch&) = delete;
  PhaseWatch& operator=(const PhaseWatch&) = delete;

  /// What kq does now (`compiling 12 programs`), said after a second of it on a terminal;
  /// `when_stopped` is said if a stop signal ends it.
  void begin(std::string doing, std::string when_stopped);
  /// The command kq started (-c), killed if a stop signal ends a phase.
  void setChild(pid_t pid) { child_.store(pid); }

 private:
  void watch();

  int stop_fd_;
  bool drain_stop_fd_;  // a counter (Further): read, to wait for the next
  bool terminal_;
  int wake_fd_ = -1;
  std::atomic<pid_t> child_{0};
  std::atomic<uint64_t> generation_{0};
  std::string doing_;         // guarded by generation_ changes: written before the wake
  std::string when_stopped_;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace kq::driver
