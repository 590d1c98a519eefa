// The engine without a kernel: sinks fed recorded bytes and hand-made results.
#include <sstream>

#include <gtest/gtest.h>

#include "engine/sinks.h"
#include "runtime/type_dump.h"

namespace kq::engine {
namespace {

/// A context that names every address `sym_ADDR` and reads no file.
struct FakeHost : Symbolizer, FileReader {
  std::string kernel(uint64_t a) override { return "ksym_" + std::to_string(a); }
  std::string user(uint32_t pid, uint64_t a) override { return "usym_" + std::to_string(a); }
  std::string text(const std::string& path) override { return "<" + path + ">"; }
};

struct Rendered {
  std::string out, err;
};

Rendered summaryOf(const plan::ProgramPlan& plan, const SessionResult& result, OutputFormat format) {
  FakeHost host;
  runtime::TypeDumper types(nullptr);
  PrintContext context{host, types, host, 0};
  std::ostringstream out, err;
  makeSink(format, plan, context, out, err)->onSummary(result);
  return {out.str(), err.str()};
}

TEST(SessionSummary, SaysEveryLostReasonInPlainWords) {
  plan::ProgramPlan plan;
  plan.layout.probes.resize(1);
  plan.maps.push_back({"events", "ringbuf", 0, 0, 256 << 10, true, 256 << 10, 0});
  SessionResult result;
  result.events = 3;
  result.lost = {1, 0, 2, 12, 0};
  EXPECT_EQ(summaryOf(plan, result, OutputFormat::Text).err,
            "kq: 3 events, 1 lost (the 256 KiB ring buffer was full; --buffer-size makes it "
            "larger)\n"
            "kq: 2 function entries were not kept for their exit (too many calls were in flight "
            "at once)\n"
            "kq: 12 function exits had no entry seen (calls already under way when kq attached; not shown)\n");
  EXPECT_EQ(summaryOf(plan, result, OutputFormat::Json).err,
            R"({"summary":{"entries_not_kept":2,"events":3,"exits_without_entry":12,"lost":1,)"
            R"("not_counted":0,"not_counted_no_memory":0}})" "\n");
}

TEST(SessionSummary, SaysWhereAPacketQueryLostItsRecords) {
  plan::ProgramPlan plan;
  plan.layout.probes.resize(1);
  plan.maps.push_back({"events", "ringbuf", 0, 0, 4 << 10, true, 4 << 10, 0});
  SessionResult result;
  result.events = 10;
  result.lost = {45, 0, 0, 0, 0};
  QueryStats stats;
  for (int i = 0; i < 9; ++i) stats.lost_at.emplace_back("site_" + std::to_string(i), 9 - i);
  result.queries.push_back(stats);
  std::string text = summaryOf(plan, result, OutputFormat::Text).err;
  EXPECT_NE(text.find("\nkq: lost at: site_0 9, site_1 8, site_2 7, site_3 6, site_4 5, site_5 4, site_6 3, "
                      "site_7 2, and 1 more site\n"),
            std::string::npos)
      << text;
  std::string json = summaryOf(plan, result, OutputFormat::Json).err;
  EXPECT_NE(json.find(R"("lost_at":{"site_0":9,"site_1":8,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("site_8":1})"), std::string::npos) << json;
}

// What each query left unshown in the ring at the end is said for it too: a query's events,
// losses and unshown records add up to what a count on the same place counted (runtime
// test test_a_count_and_a_print_on_one_place_end_at_one_instant, which under a sanitizer's
// slow reader found the query's share missing).
TEST(SessionSummary, SaysWhatEachQueryLeftUnshown) {
  plan::ProgramPlan plan;
  plan.layout.queries = 2;
  plan.layout.probes.resize(1);
  SessionResult result;
  result.events = 5;
  result.not_shown = 7;
  result.queries.resize(2);
  result.queries[1].events = 5;
  result.queries[1].not_shown = 7;
  std::string json = summaryOf(plan, result, OutputFormat::Json).err;
  EXPECT_NE(json.find(R"("not_counted_no_memory":0,"not_shown":7,"query":2})"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("not_counted_no_memory":0,"query":1})"), std::string::npos) << json;
}

}  // namespace
}  // namespace kq::engine
