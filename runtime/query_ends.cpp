#include "runtime/query_ends.h"

#include <algorithm>
#include <climits>

namespace kq::runtime {

int64_t deadlineAfter(int64_t start_ns, uint64_t after_ns) {
  if (after_ns == 0 || after_ns > static_cast<uint64_t>(INT64_MAX - start_ns)) return 0;
  return start_ns + static_cast<int64_t>(after_ns);
}

QueryEnds::QueryEnds(const std::vector<plan::QueryLimits>& limits, const plan::ProgramLayout& layout,
                     int64_t start_ns) {
  uint32_t count = layout.queries;
  for (const plan::ProbeLayout& p : layout.probes) count = std::max(count, p.query + 1);
  for (const plan::AggregateLayout& a : layout.aggregates) count = std::max(count, a.query + 1);
  queries_.resize(count);
  ended_.assign(count, false);
  for (const plan::AggregateLayout& a : layout.aggregates) queries_[a.query].aggregate = true;
  for (uint32_t q = 0; q < count && q < limits.size(); ++q) {
    queries_[q].deadline_ns = deadlineAfter(start_ns, limits[q].for_ns);
    queries_[q].limit = limits[q].limit;
  }
}

bool QueryEnds::allEnded() const {
  return std::all_of(ended_.begin(), ended_.end(), [](bool e) { return e; });
}

bool QueryEnds::printed(uint32_t query) {
  if (ended(query)) return false;
  Query& q = queries_[query];
  ++q.printed;
  if (q.aggregate || !q.limit || q.printed < q.limit) return false;
  ended_[query] = true;
  return true;
}

std::vector<uint32_t> QueryEnds::expire(int64_t now_ns) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < queries_.size(); ++i) {
    if (!ended_[i] && queries_[i].deadline_ns && now_ns >= queries_[i].deadline_ns) {
      ended_[i] = true;
      out.push_back(i);
    }
  }
  return out;
}

std::optional<int64_t> QueryEnds::nextDeadline() const {
  std::optional<int64_t> next;
  for (uint32_t i = 0; i < queries_.size(); ++i) {
    if (ended_[i] || !queries_[i].deadline_ns) continue;
    if (!next || queries_[i].deadline_ns < *next) next = queries_[i].deadline_ns;
  }
  return next;
}

uint64_t QueryEnds::tableRows(uint32_t query) const {
  return query < queries_.size() && queries_[query].aggregate ? queries_[query].limit : 0;
}

}  // namespace kq::runtime
