// When each query of a script ends: after its `for`, or once `limit` of its events were
// printed. The session ends when every query has; an aggregate query's `limit` cuts its
// table instead (aggregates.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "plan/event_layout.h"
#include "plan/query_limits.h"

namespace kq::runtime {

/// `start_ns + after_ns`, or 0 (never) when that is past what a signed 64-bit clock reaches
/// (after about 292 years): a duration of 2^63 ns or more must not wrap to the past.
int64_t deadlineAfter(int64_t start_ns, uint64_t after_ns);

class QueryEnds {
 public:
  /// `limits[q]` for query q of `layout` (missing: none), counted from `start_ns`.
  QueryEnds(const std::vector<plan::QueryLimits>& limits, const plan::ProgramLayout& layout,
            int64_t start_ns);

  bool ended(uint32_t query) const { return query >= ended_.size() || ended_[query]; }
  bool allEnded() const;
  /// An event of `query` was printed; true when it was the last its `limit` allows (the
  /// query has then ended).
  bool printed(uint32_t query);
  /// Ends `query` now (its handle's stop()).
  void end(uint32_t query) {
    if (query < ended_.size()) ended_[query] = true;
  }
  /// Queries whose `for` has passed by `now_ns`, now ended.
  std::vector<uint32_t> expire(int64_t now_ns);
  /// The earliest `for` deadline of a running query.
  std::optional<int64_t> nextDeadline() const;
  /// The rows an aggregate table of `query` may show; 0: all.
  uint64_t tableRows(uint32_t query) const;

 private:
  struct Query {
    int64_t deadline_ns = 0;  // 0: none
    uint64_t limit = 0;       // records; 0: none
    uint64_t printed = 0;
    bool aggregate = false;   // a `limit` cuts its table instead
  };
  std::vector<Query> queries_;
  std::vector<bool> ended_;
};

}  // namespace kq::runtime
