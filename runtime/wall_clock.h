// Wall-clock time of kernel times: events carry bpf_ktime_get_ns() (CLOCK_MONOTONIC), shown
// as local time with an offset measured once when a session starts, so that every time of
// a session (each event's, `strftime`'s) moves with the kernel's clock, not with the wall's.
#pragma once

#include <cstdint>

namespace kq::runtime {

/// Measures CLOCK_REALTIME - CLOCK_MONOTONIC now (each session starts with this) and
/// returns it.
int64_t measureBootOffset();

/// The offset last measured; measured now if never.
int64_t bootOffset();

}  // namespace kq::runtime
