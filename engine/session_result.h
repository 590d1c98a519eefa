// What a session saw and lost, per query and in all: data for sinks to render (the text
// summary line, the JSON summary object, `kq serve`'s self metrics), never text itself.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/program_plan.h"

namespace kq::engine {

/// What became of a join's events (plan::JoinCount), at the end of a session.
struct JoinResult {
  std::string name;
  uint32_t query = 0;
  uint64_t kept = 0;       // events of its source kept (replacing one waiting or not)
  uint64_t matched = 0;    // events of the query that found theirs: rows
  uint64_t unmatched = 0;  // events of the query that found none
  uint64_t expired = 0;    // found one older than `within`
  uint64_t waiting = 0;    // kept events still unmatched at the end
  uint64_t evicted = 0;    // kept events pushed out of the full map before any match
  uint64_t replaced = 0;   // kept events replaced by a newer one with the same key
};

/// One query's counts.
struct QueryStats {
  uint64_t events = 0;   // records read from the ring buffer (shown, or kept by a packet view)
  uint64_t printed = 0;  // records handed to the sink
  /// Records still in the ring buffer when the session had shown all it may at its end
  /// (kFinalRecords, kFinalReadNs): counted, not shown.
  uint64_t not_shown = 0;
  /// Events lost, by plan::Lost reason.
  std::array<uint64_t, plan::kLostReasons> lost{};
  /// A packet query's records lost for a full ring buffer, by site (`ip_rcv`), the most
  /// first; at the end of a session.
  std::vector<std::pair<std::string, uint64_t>> lost_at;
  bool ended = false;  // its `for`, its `limit`, or stop()

  uint64_t lostFor(plan::Lost why) const { return lost[static_cast<uint32_t>(why)]; }
};

struct SessionResult {
  uint64_t events = 0;  // records printed, all queries
  uint64_t not_shown = 0;  // records left in the ring buffer at the end, all queries
  /// Events lost, by plan::Lost reason, all queries.
  std::array<uint64_t, plan::kLostReasons> lost{};
  /// By query number.
  std::vector<QueryStats> queries;
  /// Why the output could not be written ("Broken pipe"); empty if it could.
  std::string output_failure;
  bool reader_gone = false;  // the output's reader went away (`| head`): not an error
  bool traced_exited = false;  // -p: the process ended the session
  uint32_t traced_pid = 0;
  std::vector<JoinResult> joins;

  uint64_t lostFor(plan::Lost why) const { return lost[static_cast<uint32_t>(why)]; }
};

}  // namespace kq::engine
