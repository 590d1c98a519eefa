// plan/plan_check.h: each way a plan's fields can disagree, refused with the path of the
// field and what is wrong with it.
#include "plan/plan_check.h"

#include <gtest/gtest.h>

#include <climits>
#include <functional>

#include "tests/support/sample_plan.h"

namespace kq::plan {
namespace {

using testing::samplePlan;

struct Case {
  std::function<void(PortablePlan&)> edit;
  std::string problem;
};

TEST(PlanCheck, TheSamplePlanPasses) { EXPECT_EQ(planProblem(samplePlan()), ""); }

TEST(PlanCheck, EachDisagreementIsNamed) {
  auto probe = [](PortablePlan& p) -> ProbeLayout& { return p.plan.layout.probes[0]; };
  auto table = [](PortablePlan& p) -> AggregateLayout& { return p.plan.layout.aggregates[0]; };
  auto lhist = [&](PortablePlan& p) -> AggregateSlot& { return table(p).slots[3]; };
  std::vector<Case> cases = {
      // Fields and their records.
      {[&](PortablePlan& p) { probe(p).fields[0].kind = FieldKind::Ipv6; },
       "probes[0].fields[0].size is 8, but a field of kind Ipv6 is read as 16 bytes"},
      {[&](PortablePlan& p) { probe(p).fields[0].int_bytes = 0; },
       "probes[0].fields[0].int_bytes is 0, not 1 to 8"},
      {[&](PortablePlan& p) { probe(p).fields[2].offset = 80; },
       "probes[0].fields[2] (`path`) lies outside its 136-byte record: 64 bytes at offset 80"},
      {[&](PortablePlan& p) { probe(p).fields[3].address_field = 9; },
       "probes[0].fields[3].address_field is 9, but there are 5 fields"},
      {[&](PortablePlan& p) { probe(p).fields[3].address_field = 4; },
       "probes[0].fields[3].address_field names field 4 (`msg`), which holds 0 bytes, not 8"},
      {[&](PortablePlan& p) { probe(p).fields[4].args = {-1}; },
       "probes[0].fields[4].args[0] is -1, but there are 5 fields"},
      {[&](PortablePlan& p) { probe(p).size = 16; },
       "probes[0].size is 16, less than a record's 40-byte header"},
      {[&](PortablePlan& p) { probe(p).query = 2; }, "probes[0].query is 2, but the plan has 2 queries"},
      {[&](PortablePlan& p) { probe(p).packet->skb_field = 7; },
       "probes[0].packet.skb_field is 7, but there are 5 fields"},
      {[&](PortablePlan& p) { probe(p).packet->reason_field = 4; },
       "probes[0].packet.reason_field names field 4 (`msg`), which holds 0 bytes, not 8"},
      {[&](PortablePlan& p) { probe(p).packet->modules.clear(); },
       "probes[0].packet has 1 site, 0 modules and 1 free: one of each per site"},
      // Tables.
      {[&](PortablePlan& p) { table(p).value_size = 600; },
       "aggregates[0].slots[3] (`lhist(x)`) lies outside its 600-byte value: 104 bytes at offset 560"},
      {[&](PortablePlan& p) { table(p).slots[2].buckets = 70; },
       "aggregates[0].slots[2].buckets is 70, but a Hist has 66"},
      {[&](PortablePlan& p) { lhist(p).step = 0; },
       "aggregates[0].slots[3] (`lhist(x)`) has lo 0, hi 100 and step 0: an Lhist needs lo below "
       "hi and a positive step"},
      {[&](PortablePlan& p) { lhist(p).buckets = 11; },
       "aggregates[0].slots[3].buckets is 11, but lo 0, hi 100 and step 10 make 12"},
      {[&](PortablePlan& p) {
         lhist(p).lo = INT64_MAX - 5, lhist(p).hi = INT64_MAX, lhist(p).step = INT64_MAX;
         lhist(p).buckets = 3;
       },
       "aggregates[0].slots[3] (`lhist(x)`) has a bucket that ends past the largest i64"},
      {[&](PortablePlan& p) { table(p).slots[0].kind = AggregateKind::Hist; },
       "aggregates[0].slots[0].buckets is 0, but a Hist has 66"},
      {[&](PortablePlan& p) { table(p).columns[1] = {false, 9}; },
       "aggregates[0].columns[1] names slot 9, but there are 4 slots"},
      {[&](PortablePlan& p) { table(p).columns[0] = {true, 1}; },
       "aggregates[0].columns[0] names key 1, but there is 1 key"},
      {[&](PortablePlan& p) { table(p).interval_bytes = 4; }, "aggregates[0].interval_bytes is 4, not 0 or 8"},
      {[&](PortablePlan& p) { table(p).key_size = 4, table(p).interval_bytes = 8; },
       "aggregates[0].interval_bytes is 8, more than its 4-byte key"},
      {[&](PortablePlan& p) { table(p).keys[0].offset = 8; },
       "aggregates[0].keys[0] (`comm`) lies outside its 16-byte key: 16 bytes at offset 8"},
      {[&](PortablePlan& p) { table(p).single = true; }, "aggregates[0].single is true, but the table has keys"},
      {[&](PortablePlan& p) { table(p).entry = 2; },
       "aggregates[0].entry is 2, but only a keyless table is an entry of an array"},
      {[&](PortablePlan& p) { table(p).query = 5; }, "aggregates[0].query is 5, but the plan has 2 queries"},
      // Programs and groups.
      {[](PortablePlan& p) { p.plan.programs[0].group = 2; },
       "programs[0].group is 2, but the plan names 2 groups"},
      {[](PortablePlan& p) { p.plan.programs[2].method = 5; },
       "programs[2].method is 5, but group 1 (`getpid`) has no method 1: a group's methods are numbered from 0"},
      {[](PortablePlan& p) { p.plan.programs[2].method = 4294967295u; },
       "programs[2].method is 4294967295, but group 1 (`getpid`) has no method 1: a group's methods "
       "are numbered from 0"},
      {[](PortablePlan& p) { p.plan.programs[1].function = "kq_prog_0"; },
       "programs[1].function is `kq_prog_0`, as is programs[0]'s"},
      {[](PortablePlan& p) { p.plan.programs[0].queries = {2}; }, "programs[0].queries[0] is 2, but the plan has 2 queries"},
      {[](PortablePlan& p) { p.plan.programs[0].queries = {}; },
       "programs[0].queries is empty: a program runs the parts of at least one query"},
      {[](PortablePlan& p) {
         p.plan.stops_map = "agg_1";
         p.plan.programs[0].queries = {1, 0};
       },
       "programs[0].queries[1] is 0, after 1: a program's queries are listed once each, in order"},
      {[](PortablePlan& p) { p.plan.programs[0].queries = {0, 1}; },
       "programs[0].queries has 2 queries, but the plan has no stops_map to end one of them"},
      {[](PortablePlan& p) {
         p.plan.programs[0].symbols = {"a", "b"};
         p.plan.programs[0].cookies = {1};
       },
       "programs[0].cookies has 1 entry for 2 symbols"},
      {[](PortablePlan& p) { p.plan.group_notes = {"", "", ""}; }, "group_notes has 3 entries for 2 groups"},
      {[](PortablePlan& p) { p.plan.packet_groups = {2}; }, "packet_groups[0] is 2, but the plan names 2 groups"},
      {[](PortablePlan& p) { p.plan.optional_groups = {5}; }, "optional_groups[0] is 5, but the plan names 2 groups"},
      {[](PortablePlan& p) { p.plan.packet_groups = {0, 1}; p.plan.packet_program_groups = {-1, -2}; },
       "packet_program_groups[1] is -2, but the plan names 2 groups"},
      {[](PortablePlan& p) { p.plan.packet_program_groups = {1}; },
       "packet_program_groups has 1 entry for 0 packet groups"},
      {[](PortablePlan& p) { p.plan.group_names[1] = std::string("get\x1b[2Jpid"); p.plan.programs[2].method = 2; },
       "programs[2].method is 2, but group 1 (`get\\x1b[2Jpid`) has no method 1: a group's "
       "methods are numbered from 0"},
      // Maps, joins, queries.
      {[](PortablePlan& p) { p.plan.maps[1].name = "events"; }, "maps[1].name is `events`, as is maps[0]'s"},
      {[](PortablePlan& p) { p.plan.events_map = ""; }, "events_map is empty: events need a ring buffer"},
      {[](PortablePlan& p) { p.plan.lost_map = ""; }, "lost_map is empty: losses need counters"},
      {[](PortablePlan& p) { p.plan.join_counts_map = ""; }, "join_counts_map is empty, but joins need counters"},
      {[](PortablePlan& p) { p.plan.joins[0].query = 3; }, "joins[0].query is 3, but the plan has 2 queries"},
      {[](PortablePlan& p) { p.limits.pop_back(); }, "limits has 1 entry, but the plan has 2 queries"},
      {[](PortablePlan& p) { p.query_sources.pop_back(); }, "query_sources has 1 entry, but the plan has 2 queries"},
      {[](PortablePlan& p) {
         p.limits.clear();
         p.query_sources.clear();
         p.plan.layout.queries = 0;
       },
       "queries is 0: a plan runs at least one query"},
  };
  for (const Case& c : cases) {
    PortablePlan plan = samplePlan();
    c.edit(plan);
    EXPECT_EQ(planProblem(plan), c.problem);
  }
}

TEST(PlanCheck, DecodingChecks) {
  PortablePlan plan = samplePlan();
  plan.plan.layout.probes[0].fields[2].offset = 80;
  std::string error;
  EXPECT_TRUE(decodePlanFields(encodePlan(plan), &error)) << error;
  EXPECT_FALSE(decodePlan(encodePlan(plan), &error));
  EXPECT_EQ(error, "probes[0].fields[2] (`path`) lies outside its 136-byte record: 64 bytes at offset 80");
  EXPECT_TRUE(decodePlan(encodePlan(samplePlan()), &error)) << error;
}

}  // namespace
}  // namespace kq::plan
