// What a session saw and lost, and the line kq prints about it when it ends.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "runtime/formatter.h"
#include "runtime/program_plan.h"

namespace kq::runtime {

struct SessionResult {
  uint64_t events = 0;  // records printed
  /// Events lost, by `Lost` reason.
  std::array<uint64_t, kLostReasons> lost{};
  /// Why the output could not be written ("Broken pipe"); empty if it could.
  std::string output_failure;
  bool traced_exited = false;  // -p: the process ended the session

  uint64_t lostFor(Lost why) const { return lost[static_cast<uint32_t>(why)]; }
};

/// `kq: 12 events, 0 lost` and a line for every other reason events were lost, in plain
/// words; with JSON output, one object `{"summary": {...}}` with a field per count.
std::string sessionSummary(const SessionResult& result, const ProgramPlan& plan,
                           OutputFormat format);

}  // namespace kq::runtime
