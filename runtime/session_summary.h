// What a session saw and lost, and the line kq prints about it when it ends.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/formatter.h"
#include "runtime/program_plan.h"

namespace kq::runtime {

/// What became of a join's events (runtime::JoinCount), at the end of a session.
struct JoinResult {
  std::string name;
  uint64_t kept = 0;       // events of its source kept (replacing one waiting or not)
  uint64_t matched = 0;    // events of the query that found theirs: rows
  uint64_t unmatched = 0;  // events of the query that found none
  uint64_t expired = 0;    // found one older than `within`
  uint64_t waiting = 0;    // kept events still unmatched at the end
  uint64_t evicted = 0;    // kept events pushed out of the full map before any match
  uint64_t replaced = 0;   // kept events replaced by a newer one with the same key
};

struct SessionResult {
  uint64_t events = 0;  // records printed
  /// Events lost, by `Lost` reason.
  std::array<uint64_t, kLostReasons> lost{};
  /// Why the output could not be written ("Broken pipe"); empty if it could.
  std::string output_failure;
  bool traced_exited = false;  // -p: the process ended the session
  std::vector<JoinResult> joins;

  uint64_t lostFor(Lost why) const { return lost[static_cast<uint32_t>(why)]; }
};

/// `kq: 12 events, 0 lost` and a line for every other reason events were lost, in plain
/// words; with JSON output, one object `{"summary": {...}}` with a field per count.
std::string sessionSummary(const SessionResult& result, const ProgramPlan& plan,
                           OutputFormat format);

}  // namespace kq::runtime
