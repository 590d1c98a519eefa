#include "runtime/wall_clock.h"

#include <ctime>
#include <optional>

namespace kq::runtime {
namespace {

std::optional<int64_t> measured;

int64_t nowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int64_t measureBootOffset() {
  measured = nowNs(CLOCK_REALTIME) - nowNs(CLOCK_MONOTONIC);
  return *measured;
}

int64_t bootOffset() { return measured ? *measured : measureBootOffset(); }

}  // namespace kq::runtime
