#include "runtime/query_ends.h"

#include <gtest/gtest.h>


namespace kq::runtime {
namespace {

plan::ProgramLayout twoQueries() {
  plan::ProgramLayout layout;
  layout.queries = 2;
  layout.probes.resize(2);
  layout.probes[1].query = 1;
  return layout;
}

TEST(QueryEnds, ForEndsOnlyItsQuery) {
  plan::ProgramLayout layout = twoQueries();
  QueryEnds ends({{1000, 0}, {0, 0}}, layout, /*start_ns=*/5000);
  EXPECT_EQ(ends.nextDeadline(), 6000);
  EXPECT_TRUE(ends.expire(5999).empty());
  EXPECT_EQ(ends.expire(6000), std::vector<uint32_t>{0});
  EXPECT_TRUE(ends.ended(0));
  EXPECT_FALSE(ends.ended(1));
  EXPECT_FALSE(ends.allEnded());
  EXPECT_FALSE(ends.nextDeadline());
}

TEST(QueryEnds, ForOf2To63NanosecondsOrMoreNeverEnds) {
  plan::ProgramLayout layout = twoQueries();
  QueryEnds ends({{1ull << 63, 0}, {UINT64_MAX, 0}}, layout, /*start_ns=*/5000);
  EXPECT_FALSE(ends.nextDeadline());
  EXPECT_TRUE(ends.expire(INT64_MAX).empty());
  EXPECT_EQ(deadlineAfter(5000, 1000), 6000);
  EXPECT_EQ(deadlineAfter(5000, INT64_MAX), 0);
}

TEST(QueryEnds, LimitEndsItsQueryAtTheLastPrintedEvent) {
  plan::ProgramLayout layout = twoQueries();
  QueryEnds ends({{0, 2}, {0, 1}}, layout, 0);
  EXPECT_FALSE(ends.printed(0));
  EXPECT_TRUE(ends.printed(0));
  EXPECT_FALSE(ends.printed(0));  // already ended
  EXPECT_FALSE(ends.allEnded());
  EXPECT_TRUE(ends.printed(1));
  EXPECT_TRUE(ends.allEnded());
}

TEST(QueryEnds, LimitOnAnAggregateQueryCutsItsTable) {
  plan::ProgramLayout layout = twoQueries();
  layout.aggregates.resize(1);
  layout.aggregates[0].query = 1;
  QueryEnds ends({{0, 3}, {0, 5}}, layout, 0);
  EXPECT_EQ(ends.tableRows(0), 0u);
  EXPECT_EQ(ends.tableRows(1), 5u);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(ends.printed(1));
}

}  // namespace
}  // namespace kq::runtime
