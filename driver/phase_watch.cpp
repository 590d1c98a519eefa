#include "driver/phase_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

namespace kq::driver {
namespace {

std::mutex g_phase_mutex;  // doing_ and when_stopped_

void say(const std::string& text) {
  std::string line = text + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

PhaseWatch::PhaseWatch(engine::Cancellation& stop, Stops stops, bool terminal)
    : stop_fd_(stops == Stops::Any ? stop.fd() : stop.requestsFd()), drain_stop_fd_(stops == Stops::Further),
      terminal_(terminal) {
  // Before the first phase (starting the -c command) nothing is loaded yet either.
  if (stops == Stops::Any) when_stopped_ = "stopped before anything was loaded";
  if (drain_stop_fd_) {
    uint64_t count;
    (void)!read(stop_fd_, &count, sizeof count);  // the requests so far ended the session
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { watch(); });
}

PhaseWatch::~PhaseWatch() {
  quit_.store(true);
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
  close(wake_fd_);
}

void PhaseWatch::begin(std::string doing, std::string when_stopped) {
  {
    std::lock_guard<std::mutex> lock(g_phase_mutex);
    doing_ = std::move(doing);
    when_stopped_ = std::move(when_stopped);
  }
  generation_.fetch_add(1);
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void PhaseWatch::watch() {
  uint64_t said = 0;  // the generation last said
  for (;;) {
    // Checked before each wait: the wake that reading the eventfd below consumed may have
    // been the destructor's, whose quit_ is set before it wakes.
    if (quit_.load()) return;
    uint64_t generation = generation_.load();
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    // A phase begun and not yet said: wait a second for it, else until something changes.
    int timeout = terminal_ && generation != said && generation ? 1000 : -1;
    int n = poll(fds, 2, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (quit_.load()) return;
    if (fds[0].revents) {
      std::string when_stopped;
      {
        std::lock_guard<std::mutex> lock(g_phase_mutex);
        when_stopped = when_stopped_;
      }
      if (pid_t child = child_.load()) kill(child, SIGKILL);
      say("kq: " + (when_stopped.empty() ? std::string("stopped") : when_stopped));
      _exit(130);
    }
    if (fds[1].revents) {
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof count);
      continue;
    }
    if (n == 0 && generation == generation_.load()) {
      std::string doing;
      {
        std::lock_guard<std::mutex> lock(g_phase_mutex);
        doing = doing_;
      }
      if (!doing.empty()) say("kq: " + doing + " (Ctrl-C stops)");
      said = generation;
    }
  }
}

}  // namespace kq::driver
