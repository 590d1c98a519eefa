// Aggregate tables from map bytes laid out by hand (an in-memory TableSource): what
// readTable makes of them (merged, ordered, cut, drained) and what the sinks print.
#include <gtest/gtest.h>

#include "engine/decoder.h"
#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::AggregateKind;
using plan::FieldKind;

/// 03:10:00 UTC, when tables are read in these tests.
constexpr int64_t kReadWallNs = kBootOffsetNs + 600'000'000'000;

plan::AggregateSlot slot(std::string name, AggregateKind kind, uint32_t offset, bool is_signed = true) {
  plan::AggregateSlot s;
  s.name = std::move(name);
  s.kind = kind;
  s.offset = offset;
  s.is_signed = is_signed;
  if (kind == AggregateKind::Hist) s.buckets = plan::kHistBuckets;
  return s;
}

plan::AggregateSlot lhist(std::string name, uint32_t offset, int64_t lo, int64_t hi, int64_t step) {
  plan::AggregateSlot s = slot(std::move(name), AggregateKind::Lhist, offset);
  s.lo = lo;
  s.hi = hi;
  s.step = step;
  s.buckets = static_cast<uint32_t>((hi - lo + step - 1) / step) + 2;
  return s;
}

/// A table of `keys` and `slots`, shown in that order.
plan::AggregateLayout table(std::vector<plan::FieldLayout> keys, std::vector<plan::AggregateSlot> slots,
                            uint32_t key_size, uint32_t value_size) {
  plan::AggregateLayout a;
  a.map = "agg0";
  a.keys = std::move(keys);
  a.slots = std::move(slots);
  a.key_size = key_size;
  a.value_size = value_size;
  for (uint32_t i = 0; i < a.keys.size(); ++i) a.columns.emplace_back(true, i);
  for (uint32_t i = 0; i < a.slots.size(); ++i) a.columns.emplace_back(false, i);
  return a;
}

/// A min's or max's 16 bytes at `offset`: seen, and the value as the kernel keeps it.
Bytes& extreme(Bytes& value, uint32_t offset, AggregateKind kind, bool is_signed, int64_t v) {
  return value.u64(offset, 1).u64(offset + 8, plan::encodeExtreme(kind, is_signed, static_cast<uint64_t>(v)));
}

Bytes key(const std::string& comm, uint32_t size = 16) { return Bytes(size).text(0, comm); }

class Tables : public ::testing::Test {
 protected:
  /// `layout` as the program's one aggregate.
  const plan::AggregateLayout& use(plan::AggregateLayout layout) {
    plan.layout.aggregates = {std::move(layout)};
    return plan.layout.aggregates[0];
  }
  Table read(FakeTableSource& source, TableRead how = TableRead::Snapshot, int64_t now_ns = 0,
             uint64_t max_rows = 0) {
    RecordDecoder decoder(plan.layout, host.context());
    return readTable(source, plan.layout.aggregates[0], how, decoder, now_ns, kReadWallNs, max_rows);
  }
  std::string text(const Table& t) { return printTable(plan, host, t, OutputFormat::Text).out; }
  std::string json(const Table& t) { return printTable(plan, host, t, OutputFormat::Json).out; }

  FakeHost host;
  plan::ProgramPlan plan;
};

/// `select comm, count(), sum(bytes), avg(bytes), min(lat), max(lat), max(u) group by comm`.
plan::AggregateLayout scalars() {
  return table({field("comm", FieldKind::String, 0, 16)},
               {slot("count()", AggregateKind::Count, 0), slot("sum(bytes)", AggregateKind::Sum, 8),
                slot("avg(bytes)", AggregateKind::Avg, 16), slot("min(lat)", AggregateKind::Min, 32),
                slot("max(lat)", AggregateKind::Max, 48), slot("max(u)", AggregateKind::Max, 64, false)},
               16, 80);
}

TEST_F(Tables, ScalarAggregatesAreReadLargestCountFirst) {
  use(scalars());
  FakeTableSource source(16);
  Bytes curl(80);
  curl.u64(0, 3).u64(8, 3000).u64(16, 3000).u64(24, 3);
  extreme(curl, 32, AggregateKind::Min, true, -5);
  extreme(curl, 48, AggregateKind::Max, true, 70);
  extreme(curl, 64, AggregateKind::Max, false, -1);  // 2^64 - 1
  source.put(key("curl"), curl);
  // An average rounds toward zero; a min or max no event set is none.
  source.put(key("sshd"), Bytes(80).u64(0, 5).u64(8, uint64_t(-7)).u64(16, uint64_t(-7)).u64(24, 2));
  Table t = read(source);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.left_out, 0u);
  EXPECT_EQ(t.wall_ns, kReadWallNs);
  EXPECT_EQ(t.rows[0].keys[0].text, "sshd");
  EXPECT_EQ(t.rows[0].slots[2].scalar, -3);
  EXPECT_FALSE(t.rows[0].slots[3].scalar.has_value());
  EXPECT_EQ(t.rows[1].slots[3].scalar, -5);
  EXPECT_TRUE(t.rows[1].slots[5].is_unsigned);
  EXPECT_EQ(text(t),
            "comm  count()  sum(bytes)  avg(bytes)  min(lat)  max(lat)                max(u)\n"
            "sshd        5          -7          -3         -         -                     -\n"
            "curl        3        3000        1000        -5        70  18446744073709551615\n"
            "\n");
  EXPECT_EQ(json(t),
            R"j({"time_ns":1704165000000000000,"query":1,"rows":[)j"
            R"j({"comm":"sshd","count()":5,"sum(bytes)":-7,"avg(bytes)":-3,"min(lat)":null,"max(lat)":null,"max(u)":null},)j"
            R"j({"comm":"curl","count()":3,"sum(bytes)":3000,"avg(bytes)":1000,"min(lat)":-5,"max(lat)":70,)j"
            R"j("max(u)":18446744073709551615}]})j" "\n");
}

TEST_F(Tables, AnEmptyTableSaysSo) {
  use(scalars());
  FakeTableSource source(16);
  Table t = read(source);
  EXPECT_EQ(text(t),
            "comm  count()  sum(bytes)  avg(bytes)  min(lat)  max(lat)  max(u)\n"
            "(no events)\n"
            "\n");
  EXPECT_EQ(json(t), R"j({"time_ns":1704165000000000000,"query":1,"rows":[]})j" "\n");
}

TEST_F(Tables, AnUnsignedMaxAboveTwoToTheSixtyThreeIsTheLargest) {
  use(table({field("comm", FieldKind::String, 0, 16)}, {slot("max(u)", AggregateKind::Max, 0, false)}, 16, 16));
  FakeTableSource source(16);
  Bytes big(16), small(16);
  source.put(key("big"), extreme(big, 0, AggregateKind::Max, false, int64_t(0x8000000000000001)));
  source.put(key("small"), extreme(small, 0, AggregateKind::Max, false, 5));
  EXPECT_EQ(text(read(source)),
            "comm                max(u)\n"
            "big    9223372036854775809\n"
            "small                    5\n"
            "\n");
}

TEST_F(Tables, NumericKeysAlignRightAndOthersLeft) {
  host.kernel_symbols = {{0x20, "ip_rcv+0x1"}, {0x30, "__netif_receive_skb+0x2"}};
  use(table({field("cpu", FieldKind::Unsigned, 0), field("kstack", FieldKind::KernelStack, 8, 16),
             field("ret", FieldKind::Errno, 24)},
            {slot("count()", AggregateKind::Count, 0)}, 32, 8));
  FakeTableSource source(32);
  source.put(Bytes(32).u64(0, 12).u64(8, 0x20).u64(16, 0x30).u64(24, uint64_t(-11)), Bytes(8).u64(0, 2));
  source.put(Bytes(32).u64(0, 3).u64(8, 0x20), Bytes(8).u64(0, 1));
  Table t = read(source);
  // A stack is its folded text, as flame graph tools read it, each frame its function.
  EXPECT_EQ(text(t),
            "cpu  kstack                      ret      count()\n"
            " 12  __netif_receive_skb;ip_rcv  -EAGAIN        2\n"
            "  3  ip_rcv                      0              1\n"
            "\n");
  EXPECT_EQ(json(t),
            R"j({"time_ns":1704165000000000000,"query":1,"rows":[)j"
            R"j({"cpu":12,"kstack":"__netif_receive_skb;ip_rcv","ret":"-EAGAIN","count()":2},)j"
            R"j({"cpu":3,"kstack":"ip_rcv","ret":"0","count()":1}]})j" "\n");
}

TEST_F(Tables, StacksAlikeInTheirFunctionsAreOneGroupUnlessOffsetsAreAsked) {
  // Two call sites in ip_rcv: two stacks to the kernel, one to a reader of functions.
  host.kernel_symbols = {{0x20, "ip_rcv+0x1"}, {0x28, "ip_rcv+0x9"}, {0x30, "__netif_receive_skb+0x2"}};
  use(table({field("kstack", FieldKind::KernelStack, 0, 16)}, {slot("count()", AggregateKind::Count, 0)}, 16, 8));
  FakeTableSource source(16);
  source.put(Bytes(16).u64(0, 0x20).u64(8, 0x30), Bytes(8).u64(0, 2));
  source.put(Bytes(16).u64(0, 0x28).u64(8, 0x30), Bytes(8).u64(0, 3));
  EXPECT_EQ(text(read(source)),
            "kstack                      count()\n"
            "__netif_receive_skb;ip_rcv        5\n"
            "\n");
  host.context().key_stack_offsets = true;
  EXPECT_EQ(text(read(source)),
            "kstack                              count()\n"
            "__netif_receive_skb+0x2;ip_rcv+0x9        3\n"
            "__netif_receive_skb+0x2;ip_rcv+0x1        2\n"
            "\n");
}

TEST_F(Tables, HistogramsPrintTheirBucketsBeneathTheirRow) {
  // `select dev, count(), hist(size), lhist(lat, 0, 100, 25) group by dev`.
  use(table({field("dev", FieldKind::Unsigned, 0)},
            {slot("count()", AggregateKind::Count, 0), slot("hist(size)", AggregateKind::Hist, 8, /*is_signed=*/false),
             lhist("lhist(lat, 0, 100, 25)", 544, 0, 100, 25)},
            8, 600));
  FakeTableSource source(8);
  // Each histogram: the sum of its values, then its buckets. hist: none negative, 1 of 0, 4
  // of 1, 8 in [8, 16) (nothing in [2, 4), [4, 8)); lhist: 2 in [25, 50), 1 from 100 up.
  Bytes value(600);
  value.u64(0, 13).u64(8, 4 + 8 * 9).u64(16 + 1 * 8, 1).u64(16 + 2 * 8, 4).u64(16 + 5 * 8, 8);
  value.u64(544, 30 + 40 + 250).u64(552 + 2 * 8, 2).u64(552 + 5 * 8, 1);
  source.put(Bytes(8).u64(0, 259), value);
  Table t = read(source);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].slots[1].buckets.size(), 66u);
  EXPECT_EQ(t.rows[0].slots[1].sum, 76);
  EXPECT_EQ(t.rows[0].slots[2].buckets, (std::vector<uint64_t>{0, 0, 2, 0, 0, 1}));
  EXPECT_EQ(t.rows[0].slots[2].sum, 320);
  EXPECT_EQ(text(t),
            "dev  count()\n"
            "259       13\n"
            "  hist(size):\n"
            "  [0]                           1 |@@@@@                                   |\n"
            "  [1]                           4 |@@@@@@@@@@@@@@@@@@@@                    |\n"
            "  [2, 4)                        0 |                                        |\n"
            "  [4, 8)                        0 |                                        |\n"
            "  [8, 16)                       8 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "  lhist(lat, 0, 100, 25):\n"
            "  [25, 50)                      2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "  [50, 75)                      0 |                                        |\n"
            "  [75, 100)                     0 |                                        |\n"
            "  [100, ...)                    1 |@@@@@@@@@@@@@@@@@@@@                    |\n"
            "\n");
  EXPECT_EQ(json(t),
            R"j({"time_ns":1704165000000000000,"query":1,"rows":[{"dev":259,"count()":13,"hist(size)":[)j"
            R"j({"lo":0,"hi":1,"count":1},{"lo":1,"hi":2,"count":4},{"lo":8,"hi":16,"count":8}],)j"
            R"j("lhist(lat, 0, 100, 25)":[{"lo":25,"hi":50,"count":2},{"lo":100,"hi":null,"count":1}]}]})j" "\n");
}

TEST_F(Tables, HistogramLabelsSayPowersOfTwoAsBpftraceDoesAndTheirUnit) {
  // `select hist(duration)`: signed values (the first bucket holds the negative ones), in ns.
  plan::AggregateSlot h = slot("hist(duration)", AggregateKind::Hist, 0);
  h.unit = "ns";
  use(table({}, {h}, 8, 8 + 8 * 66));
  FakeTableSource source(8);
  Bytes value(8 + 8 * 66);
  value.u64(8 + 0 * 8, 1).u64(8 + 1 * 8, 5).u64(8 + 11 * 8, 2).u64(8 + 12 * 8, 3).u64(8 + 22 * 8, 4);
  source.put(Bytes(8), value);
  std::string shown = text(read(source));
  EXPECT_NE(shown.find("  hist(duration) (ns):\n"), std::string::npos) << shown;
  EXPECT_NE(shown.find("  (..., 0)                      1 |"), std::string::npos) << shown;
  EXPECT_NE(shown.find("  [0]                           5 |"), std::string::npos) << shown;
  EXPECT_NE(shown.find("  [512, 1K)                     2 |"), std::string::npos) << shown;
  EXPECT_NE(shown.find("  [1K, 2K)                      3 |"), std::string::npos) << shown;
  EXPECT_NE(shown.find("  [1M, 2M)                      4 |"), std::string::npos) << shown;
}

TEST_F(Tables, BucketBoundsAtTheEnds) {
  plan::AggregateSlot hist = slot("h", AggregateKind::Hist, 0);
  EXPECT_EQ(bucketBounds(hist, 0), std::make_pair(std::optional<int64_t>(), std::optional<int64_t>(0)));
  EXPECT_EQ(bucketBounds(hist, 1), std::make_pair(std::optional<int64_t>(0), std::optional<int64_t>(1)));
  EXPECT_EQ(bucketBounds(hist, 63), std::make_pair(std::optional<int64_t>(int64_t{1} << 61),
                                                   std::optional<int64_t>(int64_t{1} << 62)));
  EXPECT_EQ(bucketBounds(hist, 64), std::make_pair(std::optional<int64_t>(int64_t{1} << 62), std::optional<int64_t>()));
  // A step that does not divide the range: the last bucket stops at `hi`.
  plan::AggregateSlot uneven = lhist("l", 0, 0, 10, 4);
  ASSERT_EQ(uneven.buckets, 5u);
  EXPECT_EQ(bucketBounds(uneven, 0), std::make_pair(std::optional<int64_t>(), std::optional<int64_t>(0)));
  EXPECT_EQ(bucketBounds(uneven, 3), std::make_pair(std::optional<int64_t>(8), std::optional<int64_t>(10)));
  EXPECT_EQ(bucketBounds(uneven, 4), std::make_pair(std::optional<int64_t>(10), std::optional<int64_t>()));

  use(table({}, {uneven}, 8, 48));
  FakeTableSource source(8);
  source.put(Bytes(8), Bytes(48).u64(0, -5 + 8 * 3).u64(8, 1).u64(32, 3));
  EXPECT_EQ(text(read(source)),
            "  l:\n"
            "  (..., 0)                      1 |@@@@@@@@@@@@@@                          |\n"
            "  [0, 4)                        0 |                                        |\n"
            "  [4, 8)                        0 |                                        |\n"
            "  [8, 10)                       3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "\n");
}

/// `select comm, top(2) group by comm`, with groups of 1, 7, 3 and 5 events.
void fourGroups(FakeTableSource& source) {
  source.put(key("a"), Bytes(8).u64(0, 1));
  source.put(key("b"), Bytes(8).u64(0, 7));
  source.put(key("c"), Bytes(8).u64(0, 3));
  source.put(key("d"), Bytes(8).u64(0, 5));
}

TEST_F(Tables, TopKeepsItsLargestGroupsAndSaysHowManyMore) {
  plan::AggregateSlot top = slot("top(2)", AggregateKind::Top, 0);
  top.limit = 2;
  use(table({field("comm", FieldKind::String, 0, 16)}, {top}, 16, 8));
  FakeTableSource source(16);
  fourGroups(source);
  Table t = read(source);
  EXPECT_EQ(t.left_out, 2u);
  EXPECT_EQ(text(t),
            "comm  top(2)\n"
            "b          7\n"
            "d          5\n"
            "(2 more groups)\n"
            "\n");
  EXPECT_EQ(json(t), R"j({"time_ns":1704165000000000000,"query":1,"rows":[{"comm":"b","top(2)":7},)j"
                     R"j({"comm":"d","top(2)":5}],"more":2})j" "\n");
  // All groups shown: JSON still says none are left out (the query has a `top`).
  source.entries.erase(key("a").data());
  source.entries.erase(key("c").data());
  Table all = read(source);
  EXPECT_EQ(text(all), "comm  top(2)\nb          7\nd          5\n\n");
  EXPECT_EQ(json(all), R"j({"time_ns":1704165000000000000,"query":1,"rows":[{"comm":"b","top(2)":7},)j"
                       R"j({"comm":"d","top(2)":5}],"more":0})j" "\n");
}

TEST_F(Tables, AQueryLimitCutsTheTableToItsLargestRows) {
  use(table({field("comm", FieldKind::String, 0, 16)}, {slot("count()", AggregateKind::Count, 0)}, 16, 8));
  FakeTableSource source(16);
  fourGroups(source);
  Table t = read(source, TableRead::Snapshot, 0, /*max_rows=*/1);
  EXPECT_EQ(t.left_out, 3u);
  EXPECT_EQ(text(t), "comm  count()\nb           7\n(3 more groups)\n\n");
  EXPECT_EQ(json(t), R"j({"time_ns":1704165000000000000,"query":1,"rows":[{"comm":"b","count()":7}],"more":3})j" "\n");
  // One group left out is a group.
  EXPECT_EQ(text(read(source, TableRead::Snapshot, 0, 3)),
            "comm  count()\nb           7\nd           5\nc           3\n(1 more group)\n\n");
}

TEST_F(Tables, ALimitBelowTopsWins) {
  plan::AggregateSlot top = slot("top(3)", AggregateKind::Top, 0);
  top.limit = 3;
  use(table({field("comm", FieldKind::String, 0, 16)}, {top}, 16, 8));
  FakeTableSource source(16);
  fourGroups(source);
  Table t = read(source, TableRead::Snapshot, 0, 2);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.left_out, 2u);
}

/// `select sum(bytes)`: no group by, no every. The compiler adds an unshown count, which
/// says whether an event came.
plan::AggregateLayout single(bool per_cpu = false) {
  plan::AggregateLayout a = table({}, {slot("sum(bytes)", AggregateKind::Sum, 0), slot("events", AggregateKind::Count, 8)},
                                  4, 16);
  a.columns.pop_back();
  a.single = true;
  a.per_cpu = per_cpu;
  return a;
}

TEST_F(Tables, ASingleGroupIsShownOnceAnEventCounted) {
  use(single());
  FakeTableSource source(4);
  source.put(Bytes(4), Bytes(16));  // an array's entry is always there
  Table none = read(source);
  EXPECT_TRUE(none.rows.empty());
  EXPECT_EQ(text(none), "sum(bytes)\n(no events)\n\n");
  EXPECT_EQ(json(none), R"j({"time_ns":1704165000000000000,"query":1,"rows":[]})j" "\n");

  // A sum of zero is still a sum of events.
  source.put(Bytes(4), Bytes(16).u64(0, 0).u64(8, 2));
  Table one = read(source);
  ASSERT_EQ(one.rows.size(), 1u);
  EXPECT_EQ(text(one), "sum(bytes)\n         0\n\n");
  EXPECT_EQ(json(one), R"j({"time_ns":1704165000000000000,"query":1,"rows":[{"sum(bytes)":0}]})j" "\n");
}

TEST_F(Tables, DrainingASingleGroupZeroesItsEntry) {
  use(single());
  FakeTableSource source(4);
  source.put(Bytes(4), Bytes(16).u64(0, 4096).u64(8, 3));
  EXPECT_EQ(read(source, TableRead::Snapshot).rows.size(), 1u);
  EXPECT_EQ(source.updates, 0);
  Table t = read(source, TableRead::Drain);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].slots[0].scalar, 4096);
  EXPECT_EQ(source.updates, 1);
  EXPECT_TRUE(source.removed.empty());
  EXPECT_EQ(source.entries.at(Bytes(4).data()), Bytes(16).data());
  EXPECT_TRUE(read(source, TableRead::Drain).rows.empty());
}

TEST_F(Tables, DrainingAPerCpuSingleGroupZeroesEveryCopy) {
  use(single(/*per_cpu=*/true));
  FakeTableSource source(4, /*cpus=*/2);
  source.put(Bytes(4), std::vector<Bytes>{Bytes(16).u64(0, 10).u64(8, 1), Bytes(16).u64(0, 5).u64(8, 1)});
  Table t = read(source, TableRead::Drain);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].slots[0].scalar, 15);
  EXPECT_EQ(source.entries.at(Bytes(4).data()), std::vector<uint8_t>(32, 0));
}

/// `select comm, count() group by comm every 1s`: keys start with their interval.
plan::AggregateLayout everySecond() {
  plan::AggregateLayout a = table({field("comm", FieldKind::String, 8, 16)}, {slot("count()", AggregateKind::Count, 0)},
                                  24, 8);
  a.every_ns = 1'000'000'000;
  a.interval_bytes = 8;
  return a;
}

Bytes intervalKey(uint64_t interval, const std::string& comm) { return Bytes(24).u64(0, interval).text(8, comm); }

void intervals(FakeTableSource& source) {
  source.put(intervalKey(5, "curl"), Bytes(8).u64(0, 1));
  source.put(intervalKey(6, "curl"), Bytes(8).u64(0, 2));
  source.put(intervalKey(6, "sshd"), Bytes(8).u64(0, 4));
  source.put(intervalKey(7, "curl"), Bytes(8).u64(0, 8));  // the interval counting now
}

TEST_F(Tables, ADrainTakesTheIntervalsThatEndedAndDeletesThem) {
  use(everySecond());
  FakeTableSource source(24);
  intervals(source);
  Table t = read(source, TableRead::Drain, /*now_ns=*/7'500'000'000);
  EXPECT_EQ(text(t),
            "@ 03:10:00\n"
            "comm  count()\n"
            "sshd        4\n"
            "curl        3\n"
            "\n");
  EXPECT_EQ(source.removed, (std::vector<std::vector<uint8_t>>{intervalKey(5, "curl").data(),
                                                               intervalKey(6, "curl").data(),
                                                               intervalKey(6, "sshd").data()}));
  ASSERT_EQ(source.entries.size(), 1u);
  EXPECT_EQ(source.entries.begin()->first, intervalKey(7, "curl").data());
}

TEST_F(Tables, ASnapshotLeavesEverythingAndMergesAGroupsIntervals) {
  use(everySecond());
  FakeTableSource source(24);
  intervals(source);
  Table t = read(source, TableRead::Snapshot, 7'500'000'000);
  EXPECT_EQ(text(t),
            "@ 03:10:00\n"
            "comm  count()\n"
            "curl       11\n"
            "sshd        4\n"
            "\n");
  EXPECT_TRUE(source.removed.empty());
  EXPECT_EQ(source.entries.size(), 4u);
}

TEST_F(Tables, PerCpuCopiesAreMerged) {
  plan::AggregateLayout a = table({field("comm", FieldKind::String, 0, 16)},
                                  {slot("count()", AggregateKind::Count, 0), slot("min(x)", AggregateKind::Min, 8),
                                   slot("max(x)", AggregateKind::Max, 24), slot("avg(x)", AggregateKind::Avg, 40),
                                   lhist("lhist(x, 0, 10, 5)", 56, 0, 10, 5)},
                                  16, 96);
  a.per_cpu = true;
  use(a);
  FakeTableSource source(16, /*cpus=*/3);
  Bytes cpu0(96), cpu1(96), cpu2(96);  // lhist: its sum at 56, its buckets from 64
  cpu0.u64(0, 1).u64(40, 5).u64(48, 1).u64(56, 5).u64(64 + 2 * 8, 1);
  extreme(cpu0, 8, AggregateKind::Min, true, 5);
  extreme(cpu0, 24, AggregateKind::Max, true, 5);
  cpu1.u64(0, 2).u64(40, uint64_t(-1)).u64(48, 2).u64(56, uint64_t(-1)).u64(64 + 0 * 8, 1).u64(64 + 1 * 8, 1);
  extreme(cpu1, 8, AggregateKind::Min, true, -3);
  extreme(cpu1, 24, AggregateKind::Max, true, 2);
  // CPU 2 saw no event of the group: its min and max are unset.
  source.put(key("curl"), {cpu0, cpu1, cpu2});
  Table t = read(source);
  EXPECT_EQ(text(t),
            "comm  count()  min(x)  max(x)  avg(x)\n"
            "curl        3      -3       5       1\n"
            "  lhist(x, 0, 10, 5):\n"
            "  (..., 0)                      1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "  [0, 5)                        1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "  [5, 10)                       1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "\n");
  EXPECT_EQ(t.rows[0].slots[4].sum, 4);  // 5, then -3 and 2
}

TEST_F(Tables, SeveralQueriesTitleTheirTables) {
  plan.layout.queries = 2;
  plan::AggregateLayout a = everySecond();
  a.query = 1;
  use(a);
  FakeTableSource source(24);
  source.put(intervalKey(1, "curl"), Bytes(8).u64(0, 1));
  Table t = read(source, TableRead::Drain, 2'000'000'000);
  EXPECT_EQ(text(t), "@ 03:10:00 query 2\ncomm  count()\ncurl        1\n\n");
  EXPECT_EQ(json(t), R"j({"time_ns":1704165000000000000,"query":2,"rows":[{"comm":"curl","count()":1}]})j" "\n");

  // A named query (`trace ... as execs`) goes by its name, in JSON beside its number.
  plan.layout.query_names = {"", "execs"};
  EXPECT_EQ(text(t), "@ 03:10:00 query execs\ncomm  count()\ncurl        1\n\n");
  EXPECT_EQ(json(t), R"j({"time_ns":1704165000000000000,"query":2,"query_name":"execs","rows":[{"comm":"curl","count()":1}]})j" "\n");
}

}  // namespace
}  // namespace kq::engine::testing
