// The watch of a one-shot command's slow phases: it must end whenever it is destroyed,
// whatever its thread was doing then (a hang here is a kq that never exits after a session).
#include "driver/phase_watch.h"

#include <gtest/gtest.h>

#include <chrono>

namespace kq::driver {
namespace {

TEST(PhaseWatch, EndsWhenDestroyedRightAfterAPhaseBegins) {
  // The destructor's wake can land while the thread takes the wake of `begin` (as when a
  // detach is quick): thousands of rounds, each waiting a little longer before the end, make
  // that interleaving all but certain, and each round must end.
  engine::Cancellation stop;
  for (int round = 0; round < 4000; ++round) {
    PhaseWatch watch(stop, round % 2 ? PhaseWatch::Stops::Any : PhaseWatch::Stops::Further, false);
    watch.begin("detaching", "stopped while detaching");
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(round % 200 * 250);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
}

TEST(PhaseWatch, EndsWhenDestroyedWithNoPhase) {
  engine::Cancellation stop;
  for (int round = 0; round < 1000; ++round) PhaseWatch watch(stop, PhaseWatch::Stops::Any, true);
}

}  // namespace
}  // namespace kq::driver
