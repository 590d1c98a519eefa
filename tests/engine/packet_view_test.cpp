// The per-packet view (runtime/packet_view.h) through the text sink, from recorded bytes of
// `packet` probes: events grouped by packet, in time order; calls nested with `graph`; and
// ipftrace2's fields in JSON.
#include <gtest/gtest.h>

#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;

constexpr uint64_t kSkbA = 0xffff888000a00000;
constexpr uint64_t kSkbB = 0xffff888000b00000;
/// 03:04:05.678900 in kernel time.
constexpr uint64_t kT0 = 245'678'900'000;

enum Site : uint64_t { IpRcv, TcpV4Rcv, KfreeSkb, NfHookSlow };


/// `trace packet ... select len, mark`: where the packet was seen in hidden fields, then
/// the query's own.
plan::ProbeLayout packetProbe(bool graph) {
  plan::ProbeLayout p;
  p.name = "packet";
  p.size = 88;
  plan::FieldLayout reason = hidden(field("reason", FieldKind::Enum, 64));
  reason.type_name = "enum skb_drop_reason";
  p.fields = {hidden(field("skb", FieldKind::Pointer, 40)), hidden(field("site", FieldKind::Unsigned, 48)),
              hidden(field("return", FieldKind::Unsigned, 56)), reason,
              field("len", FieldKind::Unsigned, 72), field("mark", FieldKind::Hex, 80)};
  plan::PacketLayout packet;
  packet.skb_field = 0;
  packet.site_field = 1;
  packet.return_field = 2;
  packet.reason_field = 3;
  packet.sites = {"ip_rcv", "tcp_v4_rcv", "skb:kfree_skb", "nf_hook_slow"};
  packet.modules = {"vmlinux", "vmlinux", "vmlinux", "nf_conntrack"};
  packet.frees = {false, false, true, false};
  packet.graph = graph;
  p.packet = packet;
  return p;
}

struct Seen {
  uint64_t skb;
  Site site;
  uint64_t at_ns;  // after kT0
  uint64_t len = 0;
  bool is_return = false;
  uint64_t reason = 0;
};

Bytes seen(const Seen& s, uint32_t size = 88) {
  return record(0, size, at(kT0 + s.at_ns, s.skb == kSkbA ? 0 : 2))
      .u64(40, s.skb).u64(48, s.site).u64(56, s.is_return).u64(64, s.reason).u64(72, s.len).u64(80, 0x10);
}

class PacketView : public ::testing::Test {
 protected:
  std::string print(const std::vector<Bytes>& records, engine::PacketView view = engine::PacketView::End) {
    TextOptions options;
    options.packets = view;
    return printEvents(plan, host, records, OutputFormat::Text, options).out;
  }
  FakeHost host;
  plan::ProgramPlan plan;
};

TEST_F(PacketView, EventsOfInterleavedPacketsAreGroupedPerPacketInTimeOrder) {
  plan.layout.probes = {packetProbe(/*graph=*/false)};
  // As the ring buffer hands them over: two packets interleaved, one event late (CPUs'
  // records arrive out of order), and A's address used again once A was freed.
  std::vector<Bytes> records{
      seen({kSkbA, IpRcv, 0, 60}),
      seen({kSkbB, IpRcv, 500, 1500}),
      seen({kSkbA, NfHookSlow, 2000, 60}),
      seen({kSkbB, TcpV4Rcv, 1500, 1480}),
      seen({kSkbA, KfreeSkb, 13000, 60, false, 3}),
      seen({kSkbA, IpRcv, 19000, 42}),
  };
  EXPECT_EQ(print(records),
            "packet 0xffff888000a00000: 3 events in 13.0 µs\n"
            "  TIME              ELAPSED  CPU  FUNCTION                     len  mark\n"
            "  03:04:05.678900     +0 ns    0  ip_rcv                       60   0x10\n"
            "  03:04:05.678902   +2.0 µs    0  nf_hook_slow [nf_conntrack]  60   0x10\n"
            "  03:04:05.678913  +13.0 µs    0  skb:kfree_skb                60   0x10  drop: SKB_DROP_REASON_NO_SOCKET\n"
            "\n"
            "packet 0xffff888000b00000: 2 events in 1.0 µs\n"
            "  TIME             ELAPSED  CPU  FUNCTION    len   mark\n"
            "  03:04:05.678900    +0 ns    2  ip_rcv      1500  0x10\n"
            "  03:04:05.678901  +1.0 µs    2  tcp_v4_rcv  1480  0x10\n"
            "\n"
            "packet 0xffff888000a00000: 1 event in 0 ns\n"
            "  TIME             ELAPSED  CPU  FUNCTION  len  mark\n"
            "  03:04:05.678919    +0 ns    0  ip_rcv    42   0x10\n");
}

/// The same probe with the journey the kernel keeps (at offset 88).
plan::ProbeLayout journeyProbe() {
  plan::ProbeLayout p = packetProbe(/*graph=*/false);
  p.size = 96;
  p.fields.push_back(hidden(field("journey", FieldKind::Unsigned, 88)));
  p.packet->journey_field = static_cast<int32_t>(p.fields.size() - 1);
  return p;
}

Bytes onJourney(const Seen& s, uint64_t journey) { return seen(s, 96).u64(88, journey); }

TEST_F(PacketView, AJourneyIsOnePacketWhateverItsSkbs) {
  plan.layout.probes = {journeyProbe()};
  constexpr uint64_t kClone = 0xffff888000c00000;
  // A's clone (a packet socket's copy) shares A's journey; A's address, used again after A
  // was freed, is another journey: another packet.
  std::vector<Bytes> records{
      onJourney({kSkbA, IpRcv, 0, 60}, 0x1000),
      onJourney({kClone, KfreeSkb, 4000, 60}, 0x1000),
      onJourney({kSkbA, KfreeSkb, 13000, 60}, 0x1000),
      onJourney({kSkbA, IpRcv, 19000, 42}, 0x2001),
  };
  EXPECT_EQ(print(records),
            "packet 0xffff888000a00000: 3 events in 13.0 µs, on 2 skbs\n"
            "  TIME              ELAPSED  CPU  SKB                 FUNCTION       len  mark\n"
            "  03:04:05.678900     +0 ns    0  0xffff888000a00000  ip_rcv         60   0x10\n"
            "  03:04:05.678904   +4.0 µs    2  0xffff888000c00000  skb:kfree_skb  60   0x10\n"
            "  03:04:05.678913  +13.0 µs    0  0xffff888000a00000  skb:kfree_skb  60   0x10\n"
            "\n"
            "packet 0xffff888000a00000: 1 event in 0 ns\n"
            "  TIME             ELAPSED  CPU  FUNCTION  len  mark\n"
            "  03:04:05.678919    +0 ns    0  ip_rcv    42   0x10\n");
}

TEST_F(PacketView, AnXdpProgramsVerdictEndsItsStep) {
  // A fifth site, an XDP program traced by fexit: its verdict in a hidden Table field.
  plan::ProbeLayout probe = journeyProbe();
  probe.size = 104;
  plan::FieldLayout verdict = hidden(field("verdict", FieldKind::Table, 96));
  verdict.names = {{int64_t{6} << 32 | 1, "XDP_DROP"}, {int64_t{6} << 32 | 2, "XDP_PASS"}};
  probe.fields.push_back(verdict);
  probe.packet->verdict_field = static_cast<int32_t>(probe.fields.size() - 1);
  probe.packet->sites.push_back("bpf:xdp_drop_udp");
  probe.packet->modules.push_back("bpf");
  probe.packet->frees.push_back(false);
  plan.layout.probes = {probe};
  constexpr uint64_t kXdp = 4;
  auto judged = [](const Seen& s, uint64_t verdict) { return seen(s, 104).u64(88, 0x1000).u64(96, verdict); };
  std::vector<Bytes> records{
      judged({kSkbA, IpRcv, 0, 60}, 0),
      judged({kSkbA, static_cast<Site>(kXdp), 1000, 60}, uint64_t{6} << 32 | 1),
      judged({kSkbA, KfreeSkb, 2000, 60}, 0),
  };
  EXPECT_EQ(print(records),
            "packet 0xffff888000a00000: 3 events in 2.0 µs\n"
            "  TIME             ELAPSED  CPU  FUNCTION                len  mark\n"
            "  03:04:05.678900    +0 ns    0  ip_rcv                  60   0x10\n"
            "  03:04:05.678901  +1.0 µs    0  bpf:xdp_drop_udp [bpf]  60   0x10  verdict: XDP_DROP\n"
            "  03:04:05.678902  +2.0 µs    0  skb:kfree_skb           60   0x10\n");
  std::string json = printEvents(plan, host, {records[1]}, OutputFormat::Json, {}).out;
  EXPECT_NE(json.find(R"("function":"bpf:xdp_drop_udp","is_return":false,"verdict":"XDP_DROP","journey":"0x1000")"),
            std::string::npos) << json;
}

TEST_F(PacketView, EventsAreLinesAsTheyComeThenThePerPacketView) {
  plan.layout.probes = {packetProbe(/*graph=*/false)};
  std::vector<Bytes> records{
      seen({kSkbA, IpRcv, 0, 60}),
      seen({kSkbB, TcpV4Rcv, 1500, 1480}),
      seen({kSkbA, KfreeSkb, 13000, 60, false, 3}),
  };
  const std::string live =
      "TIME             SKB                 CPU  COMM             FUNCTION                         len  mark\n"
      "03:04:05.678900  0xffff888000a00000    0  curl             ip_rcv                            60  0x10\n"
      "03:04:05.678901  0xffff888000b00000    2  curl             tcp_v4_rcv                      1480  0x10\n"
      "03:04:05.678913  0xffff888000a00000    0  curl             skb:kfree_skb                     60  0x10  "
      "drop: SKB_DROP_REASON_NO_SOCKET\n";
  EXPECT_EQ(print(records, engine::PacketView::Live), live);
  std::string both = print(records, engine::PacketView::Both);
  EXPECT_EQ(both.substr(0, live.size() + 1), live + "\n");
  EXPECT_EQ(both.substr(live.size() + 1), print(records));
}

TEST_F(PacketView, PacketProbesAloneHaveNoEventHeader) {
  // The live lines' header once attached; the per-packet view has its own.
  plan.layout.probes = {packetProbe(false)};
  EXPECT_EQ(print({}), "");
  EXPECT_EQ(print({}, engine::PacketView::Live),
            "TIME             SKB                 CPU  COMM             FUNCTION                         len  mark\n");
}

TEST_F(PacketView, GraphNestsCallsWithTheirDurations) {
  plan.layout.probes = {packetProbe(/*graph=*/true)};
  std::vector<Bytes> records{
      seen({kSkbA, IpRcv, 0, 60}),
      seen({kSkbA, NfHookSlow, 200, 60}),
      seen({kSkbA, NfHookSlow, 500, 60, true}),
      seen({kSkbA, TcpV4Rcv, 1000, 60}),
      seen({kSkbA, TcpV4Rcv, 2000, 40, true}),
      seen({kSkbA, IpRcv, 3000, 40, true}),
  };
  // Live, each entry and return as it comes.
  EXPECT_EQ(print(records, engine::PacketView::Live),
            "TIME             SKB                 CPU  COMM             FUNCTION                            len  mark\n"
            "03:04:05.678900  0xffff888000a00000    0  curl             -> ip_rcv                            60  0x10\n"
            "03:04:05.678900  0xffff888000a00000    0  curl             -> nf_hook_slow [nf_conntrack]       60  0x10\n"
            "03:04:05.678900  0xffff888000a00000    0  curl             <- nf_hook_slow [nf_conntrack]       60  0x10\n"
            "03:04:05.678901  0xffff888000a00000    0  curl             -> tcp_v4_rcv                        60  0x10\n"
            "03:04:05.678902  0xffff888000a00000    0  curl             <- tcp_v4_rcv                        40  0x10\n"
            "03:04:05.678903  0xffff888000a00000    0  curl             <- ip_rcv                            40  0x10\n");
  EXPECT_EQ(print(records),
            "packet 0xffff888000a00000: 3 calls in 3.0 µs\n"
            "  TIME             ELAPSED  CPU  DURATION  FUNCTION                          len  mark\n"
            "  03:04:05.678900    +0 ns    0            ip_rcv() {                        60   0x10\n"
            "  03:04:05.678900  +200 ns    0    300 ns    nf_hook_slow [nf_conntrack]();  60   0x10\n"
            "  03:04:05.678901  +1.0 µs    0    1.0 µs    tcp_v4_rcv();                   60   0x10\n"
            "  03:04:05.678903  +3.0 µs    0    3.0 µs  }  /* ip_rcv */                   40   0x10\n");
}

TEST_F(PacketView, JsonHasIpftrace2sFieldsThenTheQuerys) {
  plan.layout.probes = {packetProbe(false)};
  EXPECT_EQ(printEvents(plan, host, {seen({kSkbA, NfHookSlow, 0, 60}), seen({kSkbA, KfreeSkb, 10, 60, false, 2})},
                        OutputFormat::Json).out,
            R"({"packet_id":"0xffff888000a00000","timestamp":245678900000,"processor_id":0,)"
            R"("module":"nf_conntrack","function":"nf_hook_slow","is_return":false,"len":60,"mark":"0x10"})" "\n"
            R"({"packet_id":"0xffff888000a00000","timestamp":245678900010,"processor_id":0,)"
            R"("module":"vmlinux","function":"skb:kfree_skb","is_return":false,)"
            R"("drop_reason":"SKB_DROP_REASON_NOT_SPECIFIED","len":60,"mark":"0x10"})" "\n");
}

}  // namespace
}  // namespace kq::engine::testing
