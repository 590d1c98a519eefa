// A sink of a test's own, to show that a front end can bring one: it counts the values it
// is handed by kind and sums the signed integers. It needs nothing from the engine but
// engine/sink.h, and no change anywhere else: sinks get typed values, never bytes.
#include <map>

#include <gtest/gtest.h>

#include "engine/decoder.h"
#include "engine/sink.h"
#include "engine/table.h"
#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;

class CountingSink : public Sink {
 public:
  std::map<ValueKind, int> kinds;
  int64_t int_sum = 0;
  int events = 0;
  int rows = 0;
  bool begun = false, ended = false;

  void onBegin() override { begun = true; }
  void onEvent(const DecodedEvent& event) override {
    ++events;
    for (const Value& v : event.values) count(v);
  }
  void onTable(const Table& table) override {
    for (const TableRow& row : table.rows) {
      ++rows;
      for (const Value& key : row.keys) count(key);
      for (const AggregateValue& a : row.slots) int_sum += a.scalar.value_or(0);
    }
  }
  void onEnd() override { ended = true; }
  void onSummary(const SessionResult&) override {}
  void onError(const std::string&) override {}

 private:
  void count(const Value& v) {
    ++kinds[v.kind];
    if (v.kind == ValueKind::Int) int_sum += v.i;
  }
};


TEST(CountingSink, CountsTheDecodedValuesOfEveryEventByKind) {
  FakeHost host;
  plan::FieldLayout state = field("state", FieldKind::Enum, 72);
  state.type_name = "enum conn_state";
  plan::FieldLayout conn = field("conn", FieldKind::Record, 112, 8);
  conn.type_name = "struct conn";
  conn.address_field = 6;
  plan::FieldLayout cap = field("cap", FieldKind::Table, 128);
  cap.names = {{21, "CAP_SYS_ADMIN"}};
  plan::FieldLayout text = field("text", FieldKind::Format, 136, 0);
  text.format = "%d";
  text.args = {0};
  plan::ProgramPlan plan;
  plan::ProbeLayout probe;
  probe.name = "p";
  probe.size = 136;
  probe.fields = {field("a", FieldKind::Signed, 40),           field("b", FieldKind::Signed, 48),
                  field("n", FieldKind::Unsigned, 56),         field("ok", FieldKind::Bool, 64),
                  state,                                       field("comm", FieldKind::String, 80, 16),
                  hidden(field("conn_addr", FieldKind::Pointer, 96)), field("ip", FieldKind::Ipv4, 104, 4),
                  conn,                                        field("stack", FieldKind::KernelStack, 120, 8),
                  cap,                                         text};
  plan.layout.probes = {probe};

  CountingSink sink;
  RecordDecoder decoder(plan.layout, host.context());
  sink.onBegin();
  for (int64_t a : {-5, 3}) {
    // A capability no name is given for: a plain number.
    Bytes r = record(0, 136).u64(40, uint64_t(a)).u64(48, 100).u64(56, 7).u64(128, a < 0 ? 21 : 9).u64(120, 0x10);
    sink.onEvent(*decoder.decode(r.data().data(), r.data().size()));
  }
  sink.onEnd();

  EXPECT_TRUE(sink.begun);
  EXPECT_TRUE(sink.ended);
  EXPECT_EQ(sink.events, 2);
  EXPECT_EQ(sink.kinds, (std::map<ValueKind, int>{{ValueKind::Missing, 2},
                                                  {ValueKind::Int, 5},
                                                  {ValueKind::Uint, 2},
                                                  {ValueKind::Bool, 2},
                                                  {ValueKind::String, 2},
                                                  {ValueKind::Name, 3},
                                                  {ValueKind::IpAddress, 2},
                                                  {ValueKind::Record, 2},
                                                  {ValueKind::Stack, 2},
                                                  {ValueKind::Text, 2}}));
  // a and b of both events, and the capability without a name: -5 + 100 + 3 + 100 + 9.
  EXPECT_EQ(sink.int_sum, 207);
}

TEST(CountingSink, CountsATablesKeysAndSumsItsNumbers) {
  FakeHost host;
  plan::ProgramPlan plan;
  plan::AggregateLayout a;
  a.keys = {field("ret", FieldKind::Signed, 0), field("comm", FieldKind::String, 8, 16)};
  plan::AggregateSlot count;
  count.name = "count()";
  a.slots = {count};
  a.key_size = 24;
  a.value_size = 8;
  a.columns = {{true, 0}, {true, 1}, {false, 0}};
  plan.layout.aggregates = {a};

  FakeTableSource source(24);
  source.put(Bytes(24).u64(0, uint64_t(-2)).text(8, "curl"), Bytes(8).u64(0, 4));
  source.put(Bytes(24).u64(0, 0).text(8, "sshd"), Bytes(8).u64(0, 6));
  RecordDecoder decoder(plan.layout, host.context());
  CountingSink sink;
  sink.onTable(readTable(source, plan.layout.aggregates[0], TableRead::Snapshot, decoder, 0, 0));
  EXPECT_EQ(sink.rows, 2);
  EXPECT_EQ(sink.kinds, (std::map<ValueKind, int>{{ValueKind::Int, 2}, {ValueKind::String, 2}}));
  EXPECT_EQ(sink.int_sum, -2 + 4 + 6);
}

}  // namespace
}  // namespace kq::engine::testing
