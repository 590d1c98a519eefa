#include "engine/cancellation.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace kq::engine {

Cancellation::Cancellation() {
  fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  requests_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Cancellation::~Cancellation() {
  if (fd_ >= 0) close(fd_);
  if (requests_fd_ >= 0) close(requests_fd_);
}

void Cancellation::cancel(int sig) {
  if (sig && sig != SIGPIPE && requests_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(requests_fd_, &one, sizeof one);
  }
  int none = 0;
  signal_.compare_exchange_strong(none, sig, std::memory_order_relaxed);
  if (cancelled_.exchange(true)) return;
  uint64_t one = 1;
  if (fd_ >= 0) (void)!write(fd_, &one, sizeof one);
}

namespace {

sigset_t stopSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

}  // namespace

SignalStop::SignalStop(Cancellation& cancellation) : cancellation_(cancellation) {
  // A signal ignored when kq started (SIGINT in a script's background job) would be dropped
  // however it is blocked: the defaults first, then the block, so that it waits for us.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigset_t set = stopSet();
  pthread_sigmask(SIG_BLOCK, &set, &previous_mask_);
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &fallback, &previous_[i]);
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC);
  quit_fd_ = eventfd(0, EFD_CLOEXEC);
  reader_ = std::thread([this] {
    pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {quit_fd_, POLLIN, 0}};
    for (;;) {
      int n = poll(fds, 2, -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || fds[1].revents) return;
      signalfd_siginfo info;
      if (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        cancellation_.cancel(static_cast<int>(info.ssi_signo));
      }
    }
  });
}

SignalStop::~SignalStop() {
  uint64_t one = 1;
  (void)!write(quit_fd_, &one, sizeof one);
  reader_.join();
  close(signal_fd_);
  close(quit_fd_);
  // Signals that came after the session's end and were not read are dropped: the session
  // they were meant to stop is over (the REPL goes on).
  sigset_t pending;
  sigpending(&pending);
  sigset_t set = stopSet();
  timespec zero{0, 0};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &previous_[i], nullptr);
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

void unblockStopSignals() {
  sigset_t set = stopSet();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  for (int sig : kStopSignals) signal(sig, SIG_DFL);
}

}  // namespace kq::engine
