// Stopping a running query or session without a process-wide flag. A Cancellation is one
// stop request: whoever may stop a session (a signal, `stop N` in the REPL, a deadline of
// `kq serve`) cancels it; whatever waits (the session's epoll, the output waiting for a
// reader) sees it through its eventfd, and the ring reader through an atomic load.
//
// Signals reach it through one signalfd at the top of the process (SignalStop): the stop
// signals are blocked in every thread, read by one thread, and turned into cancel() calls.
#pragma once

#include <signal.h>

#include <array>
#include <atomic>
#include <thread>

namespace kq::engine {

class Cancellation {
 public:
  Cancellation();
  ~Cancellation();
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  /// Requests the stop; `signal` says which signal asked (0: none). The first request wins.
  void cancel(int signal = 0);
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  /// The signal that asked for the stop, or 0.
  int signal() const { return signal_.load(std::memory_order_relaxed); }
  /// Readable once cancelled (an eventfd), for poll and epoll.
  int fd() const { return fd_; }
  /// An eventfd counter, added to by every request of a signal a person sends (every one
  /// but SIGPIPE), the first and each after it: read it, and it is readable again at the
  /// next (a second Ctrl-C while kq detaches).
  int requestsFd() const { return requests_fd_; }

 private:
  std::atomic<bool> cancelled_{false};
  std::atomic<int> signal_{0};
  int fd_ = -1;
  int requests_fd_ = -1;
};

/// The signals that stop a session: Ctrl-C, SIGTERM, a hang-up, SIGQUIT and a closed pipe.
inline constexpr std::array<int, 5> kStopSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

/// For as long as it lives, the stop signals cancel `cancellation`: they are blocked in this
/// thread and in the threads it starts later (libbpf's attach threads among them), and one
/// thread reads them from a signalfd. SIGINT is caught even when kq was started with it
/// ignored (a background job of a shell script). A signal that came before is not forgotten:
/// it is still pending, and cancels at once. When it goes, the previous mask and dispositions
/// come back and a signal it did not read stays blocked-then-delivered as the caller had it.
class SignalStop {
 public:
  explicit SignalStop(Cancellation& cancellation);
  ~SignalStop();
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;

 private:
  Cancellation& cancellation_;
  sigset_t previous_mask_;
  std::array<struct sigaction, kStopSignals.size()> previous_{};
  int signal_fd_ = -1;
  int quit_fd_ = -1;  // an eventfd: tells the reading thread to end
  std::thread reader_;
};

/// The mask and dispositions a child process should start with (-c's command): none of the
/// stop signals blocked. Call between fork and exec.
void unblockStopSignals();

}  // namespace kq::engine
