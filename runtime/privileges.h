// Whether this process may load and attach tracing programs: root is not needed, the
// capabilities are (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, which holds both).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kq::runtime {

/// The effective capability set of this process (bit n: capability n), from capget.
uint64_t effectiveCapabilities();

/// The capabilities missing from `effective` to trace, named ("CAP_BPF"); empty if none.
std::vector<std::string> missingTracingCapabilities(uint64_t effective);

}  // namespace kq::runtime
