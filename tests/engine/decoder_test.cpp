// engine::RecordDecoder on whole records: the header, what it refuses, what is missing, and
// where a `packet` probe's event was seen.
#include <gtest/gtest.h>

#include "engine/decoder.h"
#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;

plan::ProgramLayout oneProbe(std::vector<plan::FieldLayout> fields) {
  plan::ProgramLayout layout;
  plan::ProbeLayout p;
  p.name = "p";
  p.fields = std::move(fields);
  p.size = 56;
  layout.probes = {p};
  return layout;
}

TEST(RecordDecoder, TheHeaderSaysWhenWhereAndWho) {
  FakeHost host;
  plan::ProgramLayout layout = oneProbe({});
  RecordDecoder decoder(layout, host.context());
  Header h = at(1'500'000'000, 5);
  h.pid = 10;
  h.tid = 11;
  h.comm = "a\x01" "b";
  Bytes r = record(0, 40, h);
  const DecodedEvent* e = decoder.decode(r.data().data(), r.data().size());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->probe, &layout.probes[0]);
  EXPECT_EQ(e->header.time_ns, 1'500'000'000u);
  EXPECT_EQ(e->wall_ns, kBootOffsetNs + 1'500'000'000);
  EXPECT_EQ(e->header.cpu, 5u);
  EXPECT_EQ(e->header.pid, 10u);
  EXPECT_EQ(e->header.tid, 11u);
  EXPECT_EQ(e->comm, "a\\x01b");
  EXPECT_FALSE(e->packet.has_value());
  EXPECT_EQ(host.events_started, 1);
}

TEST(RecordDecoder, RefusesRecordsOfNoProbeOrShorterThanAHeader) {
  FakeHost host;
  plan::ProgramLayout layout = oneProbe({});
  RecordDecoder decoder(layout, host.context());
  Bytes unknown = record(1, 40);
  EXPECT_EQ(decoder.decode(unknown.data().data(), unknown.data().size()), nullptr);
  Bytes r = record(0, 40);
  EXPECT_EQ(decoder.decode(r.data().data(), 39), nullptr);
  EXPECT_EQ(host.events_started, 0);
}

TEST(RecordDecoder, HiddenFieldsAndFieldsPastTheEndAreMissing) {
  FakeHost host;
  plan::FieldLayout addr = field("addr", FieldKind::Pointer, 40);
  addr.hidden = true;
  plan::ProgramLayout layout = oneProbe({addr, field("a", FieldKind::Unsigned, 48), field("b", FieldKind::Unsigned, 52)});
  RecordDecoder decoder(layout, host.context());
  Bytes r = record(0, 56).u64(40, 1).u64(48, 2);
  const DecodedEvent* e = decoder.decode(r.data().data(), r.data().size());
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->values.size(), 3u);
  EXPECT_EQ(e->values[0].kind, ValueKind::Missing);
  EXPECT_EQ(e->values[1].kind, ValueKind::Uint);
  EXPECT_EQ(e->values[1].u, 2u);
  // 52 + 8 bytes is past the record's 56.
  EXPECT_EQ(e->values[2].kind, ValueKind::Missing);
}

TEST(RecordDecoder, AValueIsNotLeftOverFromTheEventBefore) {
  FakeHost host;
  plan::ProgramLayout layout = oneProbe({field("s", FieldKind::String, 40, 16)});
  RecordDecoder decoder(layout, host.context());
  Bytes full = record(0, 56).text(40, std::string(15, 'x'));
  Bytes empty = record(0, 56);
  decoder.decode(full.data().data(), full.data().size());
  const DecodedEvent* e = decoder.decode(empty.data().data(), empty.data().size());
  EXPECT_EQ(e->values[0].text, "");
  EXPECT_FALSE(e->values[0].cut);
}

TEST(RecordDecoder, APacketProbesEventSaysWhereThePacketWas) {
  FakeHost host;
  plan::FieldLayout reason = field("reason", FieldKind::Enum, 64);
  reason.type_name = "enum skb_drop_reason";
  plan::ProgramLayout layout = oneProbe({field("skb", FieldKind::Pointer, 40), field("site", FieldKind::Unsigned, 48),
                                         field("return", FieldKind::Unsigned, 56), reason});
  layout.probes[0].size = 72;
  plan::PacketLayout packet;
  packet.skb_field = 0;
  packet.site_field = 1;
  packet.return_field = 2;
  packet.reason_field = 3;
  layout.probes[0].packet = packet;
  RecordDecoder decoder(layout, host.context());
  Bytes r = record(0, 72).u64(40, 0xffff888000a00000).u64(48, 3).u64(56, 1).u64(64, 2);
  const DecodedEvent* e = decoder.decode(r.data().data(), r.data().size());
  ASSERT_TRUE(e->packet.has_value());
  EXPECT_EQ(e->packet->skb, 0xffff888000a00000u);
  EXPECT_EQ(e->packet->site, 3u);
  EXPECT_TRUE(e->packet->is_return);
  EXPECT_EQ(e->packet->reason, "SKB_DROP_REASON_NOT_SPECIFIED");
  // No drop: no reason.
  Bytes kept = record(0, 72).u64(40, 0xffff888000a00000);
  EXPECT_EQ(decoder.decode(kept.data().data(), kept.data().size())->packet->reason, "");
}

TEST(RecordDecoder, AnXdpOrTcProgramsVerdictIsNamedByItsProgramType) {
  FakeHost host;
  plan::FieldLayout verdict = field("verdict", FieldKind::Table, 48);
  verdict.names = {{int64_t{6} << 32 | 1, "XDP_DROP"}, {int64_t{3} << 32 | 2, "TC_ACT_SHOT"}};
  plan::ProgramLayout layout = oneProbe({field("skb", FieldKind::Pointer, 40), verdict});
  layout.probes[0].size = 56;
  plan::PacketLayout packet;
  packet.skb_field = 0;
  packet.verdict_field = 1;
  layout.probes[0].packet = packet;
  RecordDecoder decoder(layout, host.context());
  auto verdictOf = [&](uint64_t v) {
    Bytes r = record(0, 56).u64(40, 0xffff888000a00000).u64(48, v);
    return decoder.decode(r.data().data(), r.data().size())->packet->verdict;
  };
  EXPECT_EQ(verdictOf(uint64_t{6} << 32 | 1), "XDP_DROP");
  EXPECT_EQ(verdictOf(uint64_t{3} << 32 | 2), "TC_ACT_SHOT");
  EXPECT_EQ(verdictOf(uint64_t{3} << 32 | 0xffffffff), "-1");  // a value with no name: its number
  EXPECT_EQ(verdictOf(0), "");  // a kernel function's site: none
}

}  // namespace
}  // namespace kq::engine::testing
