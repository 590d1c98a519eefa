#include "runtime/stop_request.h"

#include <atomic>

namespace kq::runtime {
namespace {

constexpr std::array<int, 5> kStopSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

std::atomic<int> g_stop_signal{0};
bool g_installed = false;

void onStopSignal(int sig) { g_stop_signal = sig; }

}  // namespace

StopSignals::StopSignals() {
  if (g_installed) return;
  g_installed = installed_ = true;
  g_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a write blocked on a pipe nobody reads returns EINTR, so the output
  // sees the request instead of waiting for the reader.
  action.sa_flags = 0;
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], &action, &previous_[i]);
  }
}

StopSignals::~StopSignals() {
  if (!installed_) return;
  g_installed = false;
  g_stop_signal = 0;  // the session it stopped is over (the REPL goes on)
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], &previous_[i], nullptr);
  }
}

bool stopRequested() { return g_stop_signal.load(std::memory_order_relaxed) != 0; }

int stopSignal() { return g_stop_signal.load(std::memory_order_relaxed); }

}  // namespace kq::runtime
