#include "runtime/session_summary.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kq::runtime {
namespace {

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

/// `256 KiB`, `4 MiB`.
std::string ringSize(uint64_t bytes) {
  return bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10);
}

std::string textSummary(const SessionResult& result, const ProgramPlan& plan) {
  bool records = std::any_of(plan.layout.probes.begin(), plan.layout.probes.end(),
                             [](const ProbeLayout& p) { return p.writes_records; });
  std::string text = "kq: ";
  uint64_t ring_full = result.lostFor(Lost::RingBufferFull);
  if (records) {
    text += fmt::format("{}, {} lost", plural(result.events, "event", "events"), ring_full);
    if (ring_full) {
      auto events = std::find_if(plan.maps.begin(), plan.maps.end(),
                                 [&](const PlannedMap& m) { return m.name == plan.events_map; });
      std::string size = events == plan.maps.end() ? "" : ringSize(events->max_entries) + " ";
      text += fmt::format(" (the {}ring buffer was full; --buffer-size makes it larger)", size);
    }
  }
  if (!plan.layout.aggregates.empty()) {
    uint64_t not_counted = result.lostFor(Lost::TableFull);
    if (records) text += "; ";
    text += plural(not_counted, "event", "events") + " not counted";
    if (not_counted) {
      text += fmt::format(" (a table reached {} groups; group by fewer or coarser keys)",
                          kAggregateGroups);
    }
  }
  if (uint64_t n = result.lostFor(Lost::StashFull)) {
    text += fmt::format("\nkq: {} not kept for {} exit (too many calls were in flight at once)",
                        plural(n, "function entry was", "function entries were"),
                        n == 1 ? "its" : "their");
  }
  if (uint64_t n = result.lostFor(Lost::StashMissing)) {
    text += fmt::format("\nkq: {} no matching entry (the entry was missed or overwritten)",
                        plural(n, "function exit had", "function exits had"));
  }
  for (const JoinResult& join : result.joins) {
    text += fmt::format("\nkq: join {}: {} kept, {} matched, {} without a match", join.name,
                        join.kept, join.matched, join.unmatched);
    if (join.expired) text += fmt::format(", {} older than `within`", join.expired);
    if (join.evicted) {
      text += fmt::format(", {} evicted (more were waiting than the join holds)", join.evicted);
    }
    if (join.waiting) text += fmt::format(", {} still waiting", join.waiting);
  }
  return text;
}

}  // namespace

std::string sessionSummary(const SessionResult& result, const ProgramPlan& plan,
                           OutputFormat format) {
  if (format == OutputFormat::Text) return textSummary(result, plan);
  nlohmann::json summary = {
      {"events", result.events},
      {"lost", result.lostFor(Lost::RingBufferFull)},
      {"not_counted", result.lostFor(Lost::TableFull)},
      {"entries_not_kept", result.lostFor(Lost::StashFull)},
      {"exits_without_entry", result.lostFor(Lost::StashMissing)},
  };
  if (!result.joins.empty()) {
    nlohmann::json joins = nlohmann::json::array();
    for (const JoinResult& join : result.joins) {
      joins.push_back({{"name", join.name}, {"kept", join.kept}, {"replaced", join.replaced},
                       {"matched", join.matched}, {"unmatched", join.unmatched},
                       {"expired", join.expired}, {"evicted", join.evicted},
                       {"waiting", join.waiting}});
    }
    summary["joins"] = joins;
  }
  return nlohmann::json{{"summary", summary}}.dump();
}

}  // namespace kq::runtime
