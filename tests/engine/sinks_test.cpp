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

}  // namespace
}  // namespace kq::engine
