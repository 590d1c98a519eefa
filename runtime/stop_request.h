// A request to stop the running session: Ctrl-C, SIGTERM, a hang-up, SIGQUIT or a closed
// pipe. One flag, set by the signal handlers, that the ring reader, the output and the wait
// loop all look at, so a stop takes effect under any load.
#pragma once

#include <signal.h>

#include <array>

namespace kq::runtime {

/// Catches the signals that stop a session for as long as it lives, clearing any earlier
/// request; restores the previous dispositions when destroyed. SIGINT is caught even when kq
/// was started with it ignored (a background job of a shell script). While one is in force,
/// another does nothing: a signal that came during start-up is not forgotten.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  bool installed_ = false;
  std::array<struct sigaction, 5> previous_{};
};

/// Whether a stop was requested while the StopSignals in force were installed.
bool stopRequested();
/// The signal that requested the stop, or 0.
int stopSignal();

}  // namespace kq::runtime
