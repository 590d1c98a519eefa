// The perf events `software:` and `hardware:` probes name, as perf and bpftrace name them:
// each with its kernel type and config (include/uapi/linux/perf_event.h) and the period a
// probe uses when the query gives none.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kq::host {

struct PerfEventKind {
  std::string_view name;   // `page-faults`
  std::string_view alias;  // `faults` (bpftrace's short name), or empty
  bool hardware;
  uint32_t type;    // PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE
  uint64_t config;  // PERF_COUNT_SW_PAGE_FAULTS, ...
  /// Events between two runs of the program when the probe gives no period (bpftrace's).
  uint64_t default_period;
  std::string_view what;  // what is counted, for `kq list`
};

/// Every software event, then every hardware one.
const std::vector<PerfEventKind>& perfEventKinds();

/// The event of that kind (software or hardware) named `name` or aliased so; null if none.
const PerfEventKind* findPerfEvent(bool hardware, std::string_view name);

}  // namespace kq::host
