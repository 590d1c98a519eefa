// kq record's file and its contents, read back: every kind of value, event, table and
// result through the codec; the file's blocks through the writer and reader, cut short or
// corrupted at every byte (each refusal names the byte); the BTF subset a recording keeps,
// which must print a dump exactly as the whole BTF does; and user-space counting as the
// kernel counts (engine/table.h countInto).
#include <bpf/btf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "host/btf_file.h"
#include "engine/table.h"
#include "record/recording_file.h"
#include "record/session_codec.h"
#include "runtime/btf_subset.h"
#include "runtime/kernel_types.h"
#include "runtime/type_dump.h"

namespace kq::record {
namespace {

using engine::Value;
using engine::ValueKind;

std::string tempPath(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("kq-recording-test-") + std::to_string(getpid()) + name)).string();
}

std::vector<Value> everyKind() {
  std::vector<Value> values(7);
  values[0].kind = ValueKind::Int;
  values[0].i = -42;
  values[0].text = "-42";
  values[1].kind = ValueKind::String;
  values[1].text = "a string that filled its field";
  values[1].cut = true;
  values[2].kind = ValueKind::Stack;
  values[2].addresses = {0xffffffff81000000ull, 0x10};
  values[2].frames = {"ip_rcv+0x1a", "__netif_receive_skb"};
  values[3].kind = ValueKind::Record;
  values[3].u = 0xffff888100000000ull;
  values[3].bytes = {1, 2, 3, 0, 255};
  values[4].kind = ValueKind::Name;
  values[4].i = 2;
  values[4].text = "SKB_DROP_REASON_NO_SOCKET";
  values[5].kind = ValueKind::Uint;
  values[5].u = UINT64_MAX;
  values[5].text = "18446744073709551615";
  values[6].kind = ValueKind::Missing;
  return values;
}

bool same(const Value& a, const Value& b) {
  return a.kind == b.kind && a.i == b.i && a.u == b.u && a.text == b.text && a.cut == b.cut && a.bytes == b.bytes &&
         a.addresses == b.addresses && a.frames == b.frames;
}

plan::ProgramLayout layoutFor(size_t fields) {
  plan::ProgramLayout layout;
  plan::ProbeLayout probe;
  probe.name = "syscall:openat";
  probe.fields.resize(fields);
  if (fields > 3) {
    probe.fields[3].kind = plan::FieldKind::Record;  // everyKind()'s dump, of 5 bytes
    probe.fields[3].size = 5;
  }
  layout.probes.push_back(probe);
  plan::AggregateLayout table;
  table.keys.resize(1);
  table.slots.resize(2);
  layout.aggregates.push_back(table);
  return layout;
}

TEST(SessionCodec, EveryValueEventTableAndResultComesBackAsItWent) {
  plan::ProgramLayout layout = layoutFor(7);
  engine::DecodedEvent event;
  event.header.time_ns = 123456789;
  event.header.pid = 7;
  event.wall_ns = -5;  // before the epoch: still a number
  event.comm = "python3";
  event.probe = &layout.probes[0];
  event.probe_name = "syscall:open";  // a glob's record names itself
  event.values = everyKind();
  event.packet = engine::PacketFacts{0xffff0000, 3, true, "NO_SOCKET", 0x1234000, "XDP_DROP"};
  layout.probes[0].packet = plan::PacketLayout{};
  layout.probes[0].packet->sites = {"ip_rcv", "ip_output", "dev_queue_xmit", "skb:kfree_skb"};
  ByteWriter out;
  encodeEvent(out, event);

  engine::Table table;
  table.layout = &layout.aggregates[0];
  table.wall_ns = 99;
  engine::TableRow row;
  row.keys = {everyKind()[1]};
  row.slots.resize(2);
  row.slots[0].scalar = -3;
  row.slots[1].buckets = {0, 5, 1};
  row.slots[1].sum = 7;
  table.rows = {row, row};
  table.left_out = 4;
  table.events = 11;
  encodeTable(out, table, 0);

  engine::SessionResult result;
  result.events = 2;
  result.lost[0] = 9;
  result.queries.resize(2);
  result.queries[1].lost[3] = 1;
  result.joins.push_back({"o", 1, 10, 3, 7, 1, 24, 0, 2});
  result.output_failure = "Broken pipe";
  encodeResult(out, result);

  ByteReader in(reinterpret_cast<const uint8_t*>(out.data().data()), out.size());
  engine::DecodedEvent e2;
  decodeEvent(in, layout, e2);
  engine::Table t2;
  decodeTable(in, layout, t2);
  engine::SessionResult r2;
  decodeResult(in, r2);
  ASSERT_TRUE(in.ok()) << in.error();
  EXPECT_TRUE(in.atEnd());
  EXPECT_EQ(e2.header.time_ns, 123456789u);
  EXPECT_EQ(e2.wall_ns, -5);
  EXPECT_EQ(e2.comm, "python3");
  EXPECT_EQ(e2.probe_name, "syscall:open");
  ASSERT_EQ(e2.values.size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_TRUE(same(e2.values[i], event.values[i])) << i;
  ASSERT_TRUE(e2.packet);
  EXPECT_EQ(e2.packet->reason, "NO_SOCKET");
  EXPECT_EQ(e2.packet->journey, 0x1234000u);
  EXPECT_EQ(e2.packet->verdict, "XDP_DROP");
  EXPECT_TRUE(e2.packet->is_return);
  ASSERT_EQ(t2.rows.size(), 2u);
  EXPECT_EQ(t2.layout, &layout.aggregates[0]);
  EXPECT_EQ(*t2.rows[1].slots[0].scalar, -3);
  EXPECT_EQ(t2.rows[1].slots[1].buckets, (std::vector<uint64_t>{0, 5, 1}));
  EXPECT_EQ(t2.left_out, 4u);
  EXPECT_EQ(*t2.events, 11u);
  EXPECT_EQ(r2.lost[0], 9u);
  EXPECT_EQ(r2.queries[1].lost[3], 1u);
  ASSERT_EQ(r2.joins.size(), 1u);
  EXPECT_EQ(r2.joins[0].waiting, 24u);
  EXPECT_EQ(r2.output_failure, "Broken pipe");
}

TEST(SessionCodec, WhatSinksTakeForGrantedIsChecked) {
  plan::ProgramLayout layout = layoutFor(7);
  engine::DecodedEvent event;
  event.probe = &layout.probes[0];
  event.values = everyKind();
  event.values[3].bytes.resize(2);  // a dump shorter than its field: a sink would read past it
  ByteWriter out;
  encodeEvent(out, event);
  ByteReader in(reinterpret_cast<const uint8_t*>(out.data().data()), out.size());
  engine::DecodedEvent e2;
  decodeEvent(in, layout, e2);
  EXPECT_FALSE(in.ok());
  EXPECT_NE(in.error().find("2 bytes where its field has 5"), std::string::npos) << in.error();

  event.values = everyKind();
  event.packet = engine::PacketFacts{1, 0, false, ""};  // a packet of a probe that has none
  ByteWriter again;
  encodeEvent(again, event);
  ByteReader in2(reinterpret_cast<const uint8_t*>(again.data().data()), again.size());
  decodeEvent(in2, layout, e2);
  EXPECT_FALSE(in2.ok());
  EXPECT_NE(in2.error().find("packet event"), std::string::npos) << in2.error();
}

TEST(SessionCodec, WhatThePlanDoesNotHaveIsRefusedNotIndexed) {
  plan::ProgramLayout layout = layoutFor(7);
  engine::DecodedEvent event;
  event.header.probe_id = 5;  // no such probe
  event.values = everyKind();
  ByteWriter out;
  encodeEvent(out, event);
  ByteReader in(reinterpret_cast<const uint8_t*>(out.data().data()), out.size());
  engine::DecodedEvent e2;
  decodeEvent(in, layout, e2);
  EXPECT_FALSE(in.ok());
  EXPECT_NE(in.error().find("probe 5"), std::string::npos) << in.error();

  plan::ProgramLayout fewer = layoutFor(3);  // its probe has 3 fields, the event 7 values
  event.header.probe_id = 0;
  ByteWriter again;
  encodeEvent(again, event);
  ByteReader in2(reinterpret_cast<const uint8_t*>(again.data().data()), again.size());
  decodeEvent(in2, fewer, e2);
  EXPECT_FALSE(in2.ok());
  EXPECT_NE(in2.error().find("7 values"), std::string::npos) << in2.error();
}

TEST(SessionCodec, EveryCutOfAnEventIsAnErrorAtItsPlace) {
  plan::ProgramLayout layout = layoutFor(7);
  engine::DecodedEvent event;
  event.probe = &layout.probes[0];
  event.probe_name = layout.probes[0].name;
  event.values = everyKind();
  ByteWriter out;
  encodeEvent(out, event);
  for (size_t cut = 0; cut < out.size(); ++cut) {
    ByteReader in(reinterpret_cast<const uint8_t*>(out.data().data()), cut);
    engine::DecodedEvent e2;
    decodeEvent(in, layout, e2);
    EXPECT_FALSE(in.ok() && in.atEnd() && cut < out.size()) << cut;
    if (!in.ok()) {
      EXPECT_LE(in.errorAt(), cut);
    }
  }
}

class RecordingFiles : public ::testing::Test {
 protected:
  void TearDown() override { std::remove(path_.c_str()); }

  /// Blocks of a recording: one plain, one compressed, and a small one.
  void write() {
    auto writer = RecordingWriter::create(path_);
    ASSERT_TRUE(writer) << writer.error().message;
    ASSERT_TRUE((*writer)->write(BlockKind::Meta, "{\"a\":1}", false));
    ASSERT_TRUE((*writer)->write(BlockKind::Calls, std::string(5000, 'x') + "tail", true));
    ASSERT_TRUE((*writer)->write(BlockKind::End, "e", true));
  }
  std::string bytes() {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void put(const std::string& b) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << b;
  }
  /// Every block, and the reader's error after the last.
  std::pair<std::vector<Block>, std::string> readAll() {
    auto reader = RecordingReader::open(path_);
    if (!reader) return {{}, reader.error().message};
    std::vector<Block> blocks;
    Block b;
    while ((*reader)->next(b)) blocks.push_back(b);
    return {blocks, (*reader)->error()};
  }

  std::string path_ = tempPath(".kqr");
};

TEST_F(RecordingFiles, BlocksComeBackAsWritten) {
  write();
  auto [blocks, error] = readAll();
  EXPECT_EQ(error, "");
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].payload, "{\"a\":1}");
  EXPECT_EQ(blocks[1].kind, BlockKind::Calls);
  EXPECT_EQ(blocks[1].payload, std::string(5000, 'x') + "tail");
  EXPECT_LT(bytes().size(), 1000u);  // the repeated bytes were compressed
  EXPECT_EQ(blocks[2].payload, "e");
}

TEST_F(RecordingFiles, CutShortAnywhereSaysWhereAndStops) {
  write();
  std::string whole = bytes();
  // A cut between blocks reads as a shorter file here (the recording's missing end block
  // says it was cut short: Recording::play); anywhere else, the reader says so itself.
  std::set<size_t> between;
  for (const Block& b : readAll().first) between.insert(b.offset);
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    put(whole.substr(0, cut));
    auto [blocks, error] = readAll();
    if (between.count(cut)) {
      EXPECT_EQ(error, "") << cut;
      continue;
    }
    ASSERT_FALSE(error.empty()) << "cut at " << cut << " read " << blocks.size() << " blocks without a word";
    bool named = error.find("cut short at byte") != std::string::npos ||
                 error.find("is not a recording") != std::string::npos;
    EXPECT_TRUE(named) << cut << ": " << error;
  }
}

TEST_F(RecordingFiles, AFlippedByteIsCorruptionAtItsBlock) {
  write();
  std::string whole = bytes();
  for (size_t at = kFileHeaderBytes; at < whole.size(); ++at) {
    std::string b = whole;
    b[at] = static_cast<char>(b[at] ^ 0x40);
    put(b);
    auto [blocks, error] = readAll();
    EXPECT_FALSE(error.empty()) << "a flip at byte " << at << " went unnoticed";
    EXPECT_NE(error.find(" at byte "), std::string::npos) << error;
  }
}

TEST_F(RecordingFiles, OtherFilesAreNoRecordings) {
  put("trace syscall:openat\n");
  auto [blocks, error] = readAll();
  EXPECT_NE(error.find("is not a recording of kq's"), std::string::npos) << error;
  std::string header(kMagic, sizeof kMagic);
  header += std::string("\x07\0\0\0\0\0\0\0", 8);
  put(header);
  auto [b2, e2] = readAll();
  EXPECT_NE(e2.find("format 7"), std::string::npos) << e2;
}

// A struct as the kernel has them: members of other structs by value and behind pointers,
// typedefs, arrays, an enum, a function pointer.
TEST(BtfSubset, KeepsWhatADumpReadsAndPrintsItTheSame) {
  ::btf* btf = btf__new_empty();
  int u32 = btf__add_int(btf, "unsigned int", 4, 0);
  int chr = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
  int lng = btf__add_int(btf, "long", 8, BTF_INT_SIGNED);  // only the unrelated struct's
  int big = btf__add_struct(btf, "unrelated_big", 64);  // behind a pointer only
  btf__add_field(btf, "x", lng, 0, 0);
  int inner = btf__add_struct(btf, "inner", 8);
  btf__add_field(btf, "a", u32, 0, 0);
  btf__add_field(btf, "b", u32, 32, 0);
  int inner_t = btf__add_typedef(btf, "inner_t", inner);
  int big_ptr = btf__add_ptr(btf, big);
  int name = btf__add_array(btf, u32, chr, 8);
  int color = btf__add_enum(btf, "color", 4);
  btf__add_enum_value(btf, "RED", 0);
  btf__add_enum_value(btf, "GREEN", 1);
  int proto = btf__add_func_proto(btf, u32);
  btf__add_func_param(btf, "p", big_ptr);
  int fn_ptr = btf__add_ptr(btf, proto);
  int outer = btf__add_struct(btf, "outer", 40);
  btf__add_field(btf, "in", inner_t, 0, 0);
  btf__add_field(btf, "big", big_ptr, 64, 0);
  btf__add_field(btf, "name", name, 128, 0);
  btf__add_field(btf, "color", color, 192, 0);
  btf__add_field(btf, "fn", fn_ptr, 256, 0);

  auto view = host::BtfView::copyOf(btf);
  ASSERT_TRUE(view) << view.error().message;
  const host::BtfView* kernel = view->get();
  Result<runtime::BtfSubset> subset =
      runtime::btfSubset({{kernel, static_cast<uint32_t>(outer)}, {kernel, static_cast<uint32_t>(color)}});
  ASSERT_TRUE(subset) << subset.error().message;
  // libbpf reads what kq wrote.
  ::btf* small = btf__new(subset->raw.data(), static_cast<uint32_t>(subset->raw.size()));
  ASSERT_NE(small, nullptr);
  // The unrelated struct behind a pointer is only declared: no member of it is kept.
  int declared = btf__find_by_name_kind(small, "unrelated_big", BTF_KIND_FWD);
  EXPECT_GT(declared, 0);
  EXPECT_LT(btf__find_by_name_kind(small, "unrelated_big", BTF_KIND_STRUCT), 0);
  EXPECT_LT(btf__type_cnt(small), btf__type_cnt(btf));

  std::vector<uint8_t> bytes(40, 0);
  uint32_t a = 7, b = 9, green = 1;
  std::memcpy(bytes.data(), &a, 4);
  std::memcpy(bytes.data() + 4, &b, 4);
  bytes[8] = 0x10;  // big
  std::memcpy(bytes.data() + 16, "kq", 2);
  std::memcpy(bytes.data() + 24, &green, 4);
  bytes[32] = 0x20;  // fn
  plan::FieldLayout f{"v", plan::FieldKind::Record, 0, 40};
  f.type_name = "struct outer";
  f.btf_id = static_cast<uint32_t>(outer);
  runtime::KernelTypes whole("/nonexistent", kernel);
  runtime::TypeDumper whole_dumper(&whole);
  runtime::KernelTypes recorded(host::BtfView::copyOf(subset->raw).take(), {{"struct outer", subset->ids[0]}}, {});
  runtime::TypeDumper recorded_dumper(&recorded);
  EXPECT_EQ(recorded_dumper.recordText(f, bytes.data()), whole_dumper.recordText(f, bytes.data()));
  EXPECT_EQ(recorded_dumper.recordLine(f, bytes.data()), whole_dumper.recordLine(f, bytes.data()));
  EXPECT_EQ(recorded_dumper.recordJson(f, bytes.data()), whole_dumper.recordJson(f, bytes.data()));
  EXPECT_NE(whole_dumper.recordText(f, bytes.data()).find("GREEN"), std::string::npos);
  btf__free(small);
  btf__free(btf);
}

TEST(CountedGroups, CountAsTheKernelCounts) {
  plan::AggregateLayout table;
  plan::AggregateSlot count, hist, lhist, min;
  count.kind = plan::AggregateKind::Count;
  hist.kind = plan::AggregateKind::Hist;
  hist.buckets = plan::kHistBuckets;
  lhist.kind = plan::AggregateKind::Lhist;
  lhist.lo = 0;
  lhist.hi = 30;
  lhist.step = 10;
  lhist.buckets = 5;
  min.kind = plan::AggregateKind::Min;
  uint32_t offset = 0;
  for (plan::AggregateSlot* s : {&count, &hist, &lhist, &min}) {
    s->offset = offset;
    offset += static_cast<uint32_t>(plan::slotBytes(*s));
    table.slots.push_back(*s);
  }
  table.value_size = offset;
  std::vector<engine::CountedGroup> groups(2);
  for (auto& g : groups) g.value.assign(offset, 0);
  groups[0].keys.resize(0);
  for (int64_t x : {0, 1, 2, 3, 4, 35, -1}) {
    for (const plan::AggregateSlot& s : table.slots) engine::countInto(s, groups[0].value.data(), x);
  }
  for (const plan::AggregateSlot& s : table.slots) engine::countInto(s, groups[1].value.data(), 100);
  engine::Table t = engine::tableOfGroups(table, groups, 0);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(*t.rows[0].slots[0].scalar, 7);  // largest count first
  // hist: negative (-1), [0], [1,2), [2,4) twice, [4,8), [32,64) .
  EXPECT_EQ(t.rows[0].slots[1].buckets[0], 1u);
  EXPECT_EQ(t.rows[0].slots[1].buckets[1], 1u);
  EXPECT_EQ(t.rows[0].slots[1].buckets[2], 1u);
  EXPECT_EQ(t.rows[0].slots[1].buckets[3], 2u);
  EXPECT_EQ(t.rows[0].slots[1].buckets[4], 1u);
  EXPECT_EQ(t.rows[0].slots[1].buckets[7], 1u);
  // lhist 0..30 by 10: below (-1), [0,10) five, [10,20), [20,30), from 30 (35).
  EXPECT_EQ(t.rows[0].slots[2].buckets, (std::vector<uint64_t>{1, 5, 0, 0, 1}));
  EXPECT_EQ(*t.rows[0].slots[3].scalar, -1);
  EXPECT_EQ(*t.events, 8u);
}

}  // namespace
}  // namespace kq::record
