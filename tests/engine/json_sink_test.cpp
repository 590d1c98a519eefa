// The JSON sink's objects from recorded bytes: the header's keys then the fields' in order,
// unique keys, structs as objects with their address first, what a short record lacks.
#include <gtest/gtest.h>

#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;



class JsonSink : public ::testing::Test {
 protected:
  std::string print(const std::vector<Bytes>& records) {
    return printEvents(plan, host, records, OutputFormat::Json).out;
  }
  FakeHost host;
  plan::ProgramPlan plan;
};

TEST_F(JsonSink, TheHeadersKeysComeFirstThenTheFieldsInTheirOrder) {
  plan.layout.probes = {probe("tcp_sendmsg", {field("size", FieldKind::Unsigned, 40),
                                              field("comm_of_peer", FieldKind::String, 48, 16),
                                              field("at", FieldKind::Signed, 64)})};
  Header h = at(1'000'000'001'500, 3);  // 03:16:40.000001
  h.pid = 7;
  h.tid = 9;
  h.comm = "nginx";
  EXPECT_EQ(print({record(0, 72, h).u64(40, 512).text(48, "curl").u64(64, 5)}),
            R"({"time":"03:16:40.000001","time_ns":1704165400000001500,"cpu":3,"pid":7,"tid":9,)"
            R"("comm":"nginx","probe":"tcp_sendmsg","size":512,"comm_of_peer":"curl","at":5})" "\n");
  // No header line, one object a line: nothing printed before the first event.
  EXPECT_EQ(print({}), "");
}

TEST_F(JsonSink, AFieldNamedLikeAnEarlierKeyGetsANumber) {
  // `select time, comm, pid, x, x`: a time of its own, the same comm (left out), another pid.
  plan.layout.probes = {probe("p", {field("time", FieldKind::Unsigned, 40), field("comm", FieldKind::String, 48, 16),
                                    field("pid", FieldKind::Unsigned, 64), field("x", FieldKind::Unsigned, 72),
                                    field("x", FieldKind::Unsigned, 80), field("x", FieldKind::Unsigned, 88)})};
  EXPECT_EQ(print({record(0, 96).u64(40, 12).text(48, "curl").u64(64, 1).u64(72, 1).u64(80, 2).u64(88, 3)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","time_2":12,"pid_2":1,"x":1,"x_2":2,"x_3":3})" "\n");
}

TEST_F(JsonSink, AStructIsAnObjectWithItsAddressFirst) {
  plan::FieldLayout conn = field("conn", FieldKind::Record, 48, 48);
  conn.type_name = "struct conn";
  conn.address_field = 0;
  conn.is_capture = true;
  plan.layout.probes = {probe("p", {hidden(field("conn", FieldKind::Pointer, 40)), conn})};
  // Zero members are there too: JSON is for machines, which want every key.
  EXPECT_EQ(print({record(0, 96).u64(40, 0xffff888000c0ffee).u32(48, 7).text(56, "lo")}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","conn":{"address":"0xffff888000c0ffee","id":7,"flags":0,)"
            R"("name":"lo","local":{"addr":0,"port":0},"state":"CONN_IDLE","peer":"0x0","delta":0}})" "\n");
}

TEST_F(JsonSink, AStructCutShortHasTheMembersCaptured) {
  plan::FieldLayout conn = field("conn", FieldKind::Record, 48, 20);
  conn.type_name = "struct conn";
  conn.address_field = 0;
  plan.layout.probes = {probe("p", {hidden(field("conn", FieldKind::Pointer, 40)), conn})};
  // 20 bytes: `local` is cut in its middle, `addr` whole, `port` not there.
  EXPECT_EQ(print({record(0, 68).u64(40, 0x1000).u32(48, 1).u32(64, 0x0100007f)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","conn":{"address":"0x1000","id":1,"flags":0,"name":"",)"
            R"("local":{"addr":16777343}}})" "\n");
}

TEST_F(JsonSink, AStructOfATypeThisKernelLacksIsNull) {
  plan::FieldLayout gone = field("g", FieldKind::Record, 48, 8);
  gone.type_name = "struct gone";
  gone.address_field = 0;
  plan.layout.probes = {probe("p", {hidden(field("g", FieldKind::Pointer, 40)), gone})};
  EXPECT_EQ(print({record(0, 56).u64(40, 0x1000)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","g":null})" "\n");
}

TEST_F(JsonSink, StacksAreArraysInnermostFirst) {
  host.kernel_symbols = {{0x10, "bpf_prog_1_kq+0x4"}, {0x20, "ip_rcv+0x1"}, {0x30, "__netif_receive_skb+0x2"}};
  plan.layout.probes = {probe("p", {field("kstack", FieldKind::KernelStack, 40, 32),
                                    field("empty", FieldKind::KernelStack, 72, 16)})};
  EXPECT_EQ(print({record(0, 88).u64(40, 0x10).u64(48, 0x20).u64(56, 0x30)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","kstack":["ip_rcv+0x1","__netif_receive_skb+0x2"],"empty":[]})" "\n");
}

TEST_F(JsonSink, FieldsPastTheEndOfAShortRecordAreLeftOut) {
  plan.layout.probes = {probe("p", {field("a", FieldKind::Unsigned, 40), field("b", FieldKind::String, 48, 32),
                                    field("c", FieldKind::Signed, 80)})};
  EXPECT_EQ(print({record(0, 48).u64(40, 1), record(0, 88).u64(40, 2).text(48, "x").u64(80, uint64_t(-1))}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","a":1})" "\n"
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","a":2,"b":"x","c":-1})" "\n");
}

TEST_F(JsonSink, SeveralQueriesSayWhichQueryEachObjectIsFrom) {
  plan.layout.queries = 2;
  plan.layout.probes = {probe("execve", {field("n", FieldKind::Unsigned, 40)}, 0),
                        probe("exit", {field("n", FieldKind::Unsigned, 40)}, 1)};
  // The probe is its own name: the query is a key of its own.
  EXPECT_EQ(print({record(1, 48).u64(40, 2)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"exit","query":2,"n":2})" "\n");
  plan.layout.query_names = {"", "exits"};
  EXPECT_EQ(print({record(1, 48).u64(40, 2)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"exit","query":2,"query_name":"exits","n":2})" "\n");
}

TEST_F(JsonSink, TextThatIsNotUtf8IsReplaced) {
  // A file's bytes are the file's: the JSON stays valid.
  host.files["/x"] = "a\xff" "b";
  plan::FieldLayout f = field("f", FieldKind::File, 40, 0);
  f.path = "/x";
  plan.layout.probes = {probe("p", {f})};
  EXPECT_EQ(print({record(0, 40)}),
            R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,"tid":4243,)"
            R"("comm":"curl","probe":"p","f":"a)" "\xef\xbf\xbd" R"(b"})" "\n");
}

}  // namespace
}  // namespace kq::engine::testing
