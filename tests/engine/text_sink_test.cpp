// The text sink's event lines from recorded bytes: the header, the columns, name=value
// pairs when probes' columns differ, captures beneath their event, several queries.
#include <gtest/gtest.h>

#include "engine/event_lines.h"
#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;




class TextSink : public ::testing::Test {
 protected:
  std::string print(const std::vector<Bytes>& records) {
    return printEvents(plan, host, records, OutputFormat::Text).out;
  }
  FakeHost host;
  plan::ProgramPlan plan;
};

TEST_F(TextSink, ProbesSharingTheirColumnsShareOneHeader) {
  plan.layout.probes = {probe("tcp_sendmsg", {field("size", FieldKind::Unsigned, 40),
                                              field("sport", FieldKind::Unsigned, 48)}),
                        probe("tcp_recvmsg", {field("size", FieldKind::Signed, 40),
                                              field("sport", FieldKind::Unsigned, 48)})};
  Header busy;
  busy.time_ns = 3'599'999'999'999;  // 03:59:59.999
  busy.cpu = 127;
  busy.pid = 1234567;
  busy.comm = "kworker/u16:3-ev";  // all 16 bytes, no NUL
  // Values follow one another two spaces apart, however wide their column's name.
  EXPECT_EQ(print({record(0, 56).u64(40, 1448).u64(48, 22),
                   record(1, 56, busy).u64(40, uint64_t(-11)).u64(48, 443)}),
            "TIME             PID COMM            PROBE           size  sport\n"
            "03:04:05.678    4242 curl            tcp_sendmsg     1448  22\n"
            "03:59:59.999 1234567 kworker/u16:3-ev tcp_recvmsg      -11  443\n");
}

TEST_F(TextSink, TheProbeColumnIsFiveWideAtLeastAndFortyEightAtMost) {
  // One probe: no PROBE column (it would say the same on every line).
  plan.layout.probes = {probe("p", {})};
  EXPECT_EQ(print({record(0, 40)}),
            "TIME             PID COMM\n"
            "03:04:05.678    4242 curl\n");

  plan.layout.probes = {probe("p", {}), probe("q", {})};
  EXPECT_EQ(print({record(0, 40), record(1, 40)}),
            "TIME             PID COMM            PROBE\n"
            "03:04:05.678    4242 curl            p\n"
            "03:04:05.678    4242 curl            q\n");

  std::string glob(60, 'f');
  plan.layout.probes = {probe(glob, {field("n", FieldKind::Unsigned, 40)}),
                        probe("short", {field("n", FieldKind::Unsigned, 40)})};
  EXPECT_EQ(print({record(0, 48).u64(40, 1), record(1, 48).u64(40, 2)}),
            "TIME             PID COMM            PROBE" + std::string(43, ' ') + "  n\n"
            "03:04:05.678    4242 curl            " + glob + "  1\n"
            "03:04:05.678    4242 curl            short" + std::string(43, ' ') + "  2\n");
}

TEST_F(TextSink, ThePrefixLeavesOutWhatTheQuerySelects) {
  // `select comm, pid, n`: neither PID nor COMM twice; `--prefix` chooses them all, or none.
  plan.layout.probes = {probe("p", {field("comm", FieldKind::String, 40, 16), field("pid", FieldKind::Unsigned, 56),
                                    field("n", FieldKind::Unsigned, 64)})};
  plan.layout.probes[0].fields[1].int_bytes = 4;
  Bytes r = record(0, 72).text(40, "curl").u64(56, 4242).u64(64, 9);
  EXPECT_EQ(print({r}),
            "TIME          comm                 pid  n\n"
            "03:04:05.678  curl                4242  9\n");
  TextOptions none;
  none.prefix = std::vector<PrefixColumn>{};
  EXPECT_EQ(printEvents(plan, host, {r}, OutputFormat::Text, none).out,
            "comm                 pid  n\n"
            "curl                4242  9\n");
  TextOptions all;
  all.prefix = parsePrefix("time,cpu,tid,probe", nullptr);
  EXPECT_EQ(printEvents(plan, host, {r}, OutputFormat::Text, all).out,
            "TIME         CPU     TID PROBE  comm                 pid  n\n"
            "03:04:05.678   1    4243 p      curl                4242  9\n");
}

TEST_F(TextSink, AColumnGrowsToItsWidestCellAndStays) {
  // Numbers to the right, text to the left; a cell wider than its column widens it from
  // its own line on; a text cell past 40 characters overflows its own line only.
  plan.layout.probes = {probe("p", {field("n", FieldKind::Unsigned, 40), field("path", FieldKind::String, 48, 64),
                                    field("last", FieldKind::Unsigned, 112)})};
  std::string long_path(50, 'x');
  EXPECT_EQ(print({record(0, 120).u64(40, 1).text(48, "/a").u64(112, 1),
                   record(0, 120).u64(40, 123456789).text(48, "/bb").u64(112, 2),
                   record(0, 120).u64(40, 2).text(48, long_path).u64(112, 3),
                   record(0, 120).u64(40, 3).text(48, "/c").u64(112, 4)}),
            "TIME             PID COMM                   n  path                                      last\n"
            "03:04:05.678    4242 curl                   1  /a                                        1\n"
            "03:04:05.678    4242 curl             123456789  /bb                                       2\n"
            "03:04:05.678    4242 curl                     2  " + long_path + "  3\n"
            "03:04:05.678    4242 curl                     3  /c                                        4\n");
}

TEST(Prefix, ColumnsAreNamedOrNone) {
  std::string error;
  EXPECT_EQ(parsePrefix("none", &error), std::vector<PrefixColumn>{});
  EXPECT_EQ(parsePrefix("pid,comm,pid", &error), (std::vector<PrefixColumn>{PrefixColumn::Pid, PrefixColumn::Comm}));
  EXPECT_FALSE(parsePrefix("time,colour", &error));
  EXPECT_EQ(error, "--prefix takes `none` or columns of time, cpu, pid, tid, comm, query and probe, joined by commas "
                   "(`time,pid`), not `time,colour`");
}

TEST_F(TextSink, ProbesWithDifferentColumnsPrintNamesWithTheirValues) {
  plan.layout.probes = {probe("sys_enter_openat", {field("filename", FieldKind::String, 40, 32),
                                                   field("flags", FieldKind::Hex, 72)}),
                        probe("sys_exit_openat", {field("ret", FieldKind::Errno, 40)})};
  EXPECT_EQ(print({record(0, 80).text(40, "/etc/hosts").u64(72, 0x80000),
                   record(1, 48).u64(40, uint64_t(-2))}),
            "TIME             PID COMM            PROBE\n"
            "03:04:05.678    4242 curl            sys_enter_openat  filename=/etc/hosts  flags=0x80000\n"
            "03:04:05.678    4242 curl            sys_exit_openat   ret=-ENOENT\n");
}

TEST_F(TextSink, HiddenFieldsAndProbesWithoutRecordsAreNoColumns) {
  plan::ProbeLayout counted = probe("counted", {field("other", FieldKind::Unsigned, 40)});
  counted.writes_records = false;  // an aggregate's probe: its columns are the table's
  plan.layout.probes = {probe("p", {hidden(field("skb", FieldKind::Pointer, 40)), field("len", FieldKind::Unsigned, 48)}),
                        counted};
  EXPECT_EQ(print({record(0, 56).u64(40, 0xffff888000000001).u64(48, 60)}),
            "TIME             PID COMM             len\n"
            "03:04:05.678    4242 curl             60\n");
}

TEST_F(TextSink, CapturesAreIndentedBeneathTheirEventKsnoopStyle) {
  plan::FieldLayout conn = capture(field("conn", FieldKind::Record, 56, 48));
  conn.type_name = "struct conn";
  conn.address_field = 1;
  plan.layout.probes = {probe("conn_close", {field("ret", FieldKind::Signed, 40),
                                             hidden(field("conn_addr", FieldKind::Pointer, 48)),
                                             conn,
                                             capture(field("how", FieldKind::Unsigned, 104))})};
  std::vector<Bytes> records{record(0, 112).u64(48, 0xffff888000c0ffee).u32(56, 7).u32(80, 2).u64(104, 1),
                             record(0, 112).u64(40, 1).u64(48, 0xffff888000c0ff00)};
  // By default a struct is one line, its non-zero members.
  EXPECT_EQ(print(records),
            "TIME             PID COMM             ret\n"
            "03:04:05.678    4242 curl             0\n"
            "    conn = *(0xffff888000c0ffee) (struct conn){.id = 7, .state = CONN_CLOSED}\n"
            "    how = 1\n"
            "03:04:05.678    4242 curl             1\n"
            "    conn = *(0xffff888000c0ff00) (struct conn){}\n"
            "    how = 0\n");
  // --structs full: every member a line, as ksnoop prints.
  TextOptions full;
  full.full_structs = true;
  EXPECT_EQ(printEvents(plan, host, records, OutputFormat::Text, full).out,
            "TIME             PID COMM             ret\n"
            "03:04:05.678    4242 curl             0\n"
            "    conn = *(0xffff888000c0ffee) (struct conn){\n"
            "        .id = (int)7,\n"
            "        .state = (enum conn_state)CONN_CLOSED,\n"
            "    }\n"
            "    how = 1\n"
            "03:04:05.678    4242 curl             1\n"
            "    conn = *(0xffff888000c0ff00) (struct conn){\n"
            "    }\n"
            "    how = 0\n");
}

TEST_F(TextSink, ARecordInTheLineIsItsAddress) {
  plan::FieldLayout conn = field("conn", FieldKind::Record, 48, 8);
  conn.type_name = "struct conn";
  conn.address_field = 0;
  plan.layout.probes = {probe("a", {hidden(field("conn_addr", FieldKind::Pointer, 40)), conn}),
                        probe("b", {field("n", FieldKind::Unsigned, 40)})};
  // Eight bytes of the struct were captured: the dump says so.
  EXPECT_EQ(print({record(0, 56).u64(40, 0xffff888000c0ffee).u32(48, 3).u32(52, 4)}),
            "TIME             PID COMM            PROBE\n"
            "03:04:05.678    4242 curl            a      conn=0xffff888000c0ffee\n"
            "    conn = *(0xffff888000c0ffee) (struct conn){.id = 3, .flags = 4, /* 40 more bytes not captured */}\n");
}

TEST_F(TextSink, ARecordOfATypeThisKernelLacksSaysSo) {
  plan::FieldLayout gone = capture(field("g", FieldKind::Record, 48, 8));
  gone.type_name = "struct gone";
  gone.address_field = 0;
  plan.layout.probes = {probe("p", {hidden(field("g_addr", FieldKind::Pointer, 40)), gone})};
  EXPECT_EQ(print({record(0, 56).u64(40, 0xffff888000000040)}),
            "TIME             PID COMM\n"
            "03:04:05.678    4242 curl\n"
            "    g = *(0xffff888000000040) (no type `struct gone` in this kernel)\n");
}

TEST_F(TextSink, AStackIsNoColumnButABlockBeneath) {
  host.kernel_symbols = {{0x20, "ip_rcv+0x1"}, {0x30, "__netif_receive_skb+0x2"}};
  plan.layout.probes = {probe("p", {field("kstack", FieldKind::KernelStack, 40, 24), field("n", FieldKind::Unsigned, 64)})};
  EXPECT_EQ(print({record(0, 72).u64(40, 0x20).u64(48, 0x30).u64(64, 5)}),
            "TIME             PID COMM             n\n"
            "03:04:05.678    4242 curl             5\n"
            "    kstack:\n"
            "        ip_rcv+0x1\n"
            "        __netif_receive_skb+0x2\n");
}

TEST_F(TextSink, SeveralQueriesSayWhichQueryEachLineIsFrom) {
  // By number: the probes say no more (each query has one), so no PROBE column.
  plan.layout.queries = 2;
  plan.layout.probes = {probe("execve", {field("n", FieldKind::Unsigned, 40)}, 0),
                        probe("exit", {field("n", FieldKind::Unsigned, 40)}, 1)};
  EXPECT_EQ(print({record(1, 48).u64(40, 2), record(0, 48).u64(40, 1)}),
            "TIME             PID COMM            QUERY  n\n"
            "03:04:05.678    4242 curl            2      2\n"
            "03:04:05.678    4242 curl            1      1\n");
  // By name (`trace ... as starts`), and the probe too once a query has two.
  plan.layout.query_names = {"starts", ""};
  plan.layout.probes.push_back(probe("execveat", {field("n", FieldKind::Unsigned, 40)}, 0));
  EXPECT_EQ(print({record(1, 48).u64(40, 2), record(2, 48).u64(40, 3)}),
            "TIME             PID COMM            QUERY  PROBE     n\n"
            "03:04:05.678    4242 curl            2      exit      2\n"
            "03:04:05.678    4242 curl            starts execveat  3\n");
}

TEST_F(TextSink, AFieldPastTheEndOfAShortRecordIsLeftOut) {
  plan.layout.probes = {probe("p", {field("a", FieldKind::Unsigned, 40), field("b", FieldKind::Unsigned, 48),
                                    field("c", FieldKind::String, 56, 16)})};
  EXPECT_EQ(print({record(0, 56).u64(40, 1).u64(48, 2), record(0, 72).u64(40, 3).text(56, "x")}),
            "TIME             PID COMM                   a        b  c\n"
            "03:04:05.678    4242 curl                   1        2\n"
            "03:04:05.678    4242 curl                   3        0  x\n");
}

TEST_F(TextSink, AnEmptyLastValueLeavesNoTrailingSpaces) {
  plan.layout.probes = {probe("p", {field("a", FieldKind::Unsigned, 40), field("s", FieldKind::String, 48, 16)})};
  EXPECT_EQ(print({record(0, 64).u64(40, 5)}),
            "TIME             PID COMM                   a  s\n"
            "03:04:05.678    4242 curl                   5\n");
}

TEST_F(TextSink, AggregateQueriesAloneHaveNoEventHeader) {
  plan::ProbeLayout counted = probe("p", {});
  counted.writes_records = false;
  plan.layout.probes = {counted};
  EXPECT_EQ(print({}), "");
}

}  // namespace
}  // namespace kq::engine::testing
