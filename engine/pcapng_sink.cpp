// `-f pcapng`: each event's packet (the hidden columns `--packet-bytes` adds: its bytes from
// the network header, its length, the task's netns) as an enhanced packet block, on an
// interface per place packets were seen (a probe, or a function of `trace packet`), raw IP,
// with comments saying where, why dropped, by whom and which skb.
#include <sys/utsname.h>

#include <unordered_map>

#include <fmt/format.h>

#include "engine/data_sink.h"
#include "engine/pcapng.h"
#include "kq_version.h"

namespace kq::engine {
namespace {

/// Where each probe's packet columns are (driver/packet_bytes.h names them).
struct PacketColumns {
  int32_t bytes = -1, length = -1, linear = -1, netns = -1;
};

class PcapngSink : public DataSink {
 public:
  PcapngSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out, std::ostream& err)
      : DataSink(plan, context, out, err), writer_(out), err_(err) {
    for (const plan::ProbeLayout& p : plan.layout.probes) {
      PacketColumns c;
      for (size_t i = 0; i < p.fields.size(); ++i) {
        const plan::FieldLayout& f = p.fields[i];
        if (!f.hidden) continue;
        if (f.name == kPacketBytesColumn && f.kind == plan::FieldKind::Buffer) c.bytes = static_cast<int32_t>(i);
        if (f.name == kPacketLengthColumn) c.length = static_cast<int32_t>(i);
        if (f.name == kPacketLinearColumn) c.linear = static_cast<int32_t>(i);
        if (f.name == kPacketNetnsColumn) c.netns = static_cast<int32_t>(i);
      }
      columns_.push_back(c);
    }
  }

  void onBegin() override {
    utsname u{};
    uname(&u);
    writer_.section(u.machine, fmt::format("Linux {}", u.release), fmt::format("kq {}", KQ_VERSION));
  }

  void onEvent(const DecodedEvent& e) override {
    const PacketColumns& c = columns_[e.header.probe_id];
    if (c.bytes < 0 || c.length < 0) {
      ++without_packet_;
      return;
    }
    const Value& bytes = e.values[c.bytes];
    auto length = static_cast<uint32_t>(e.values[c.length].i);
    uint32_t linear = c.linear >= 0 ? static_cast<uint32_t>(e.values[c.linear].i) : length;
    if (length == 0) {
      ++without_packet_;  // no network header yet
      return;
    }
    uint32_t captured = std::min<uint32_t>({static_cast<uint32_t>(bytes.bytes.size()), length, linear});
    std::string site = e.packet && e.probe->packet && e.packet->site < e.probe->packet->sites.size()
                           ? e.probe->packet->sites[e.packet->site]
                           : e.probe_name;
    auto [it, added] = interfaces_.emplace(site, 0);
    if (added) {
      it->second = writer_.addInterface(site, fmt::format("kq: packets seen at {}", site), pcapng::kLinkTypeRaw,
                                        static_cast<uint32_t>(bytes.bytes.size()));
    }
    std::vector<std::string> comments = {site};
    if (e.packet && !e.packet->reason.empty()) comments.push_back("drop: " + e.packet->reason);
    if (e.packet && !e.packet->verdict.empty()) comments.push_back("verdict: " + e.packet->verdict);
    comments.push_back(fmt::format("pid {} tid {} comm {}", e.header.pid, e.header.tid, e.comm));
    if (c.netns >= 0) comments.push_back(fmt::format("netns {}", e.values[c.netns].u));
    uint64_t skb = e.packet ? e.packet->skb : 0;
    if (skb) comments.push_back(fmt::format("skb 0x{:x}", skb));
    writer_.packet(it->second, static_cast<uint64_t>(e.wall_ns), bytes.bytes.data(), captured, length, comments);
    ++packets_;
  }

  void onSummary(const SessionResult& result) override {
    if (without_packet_ && !result.reader_gone) {
      err_ << fmt::format("kq: {} packets written; {} events had no packet to write (a probe without one "
                          "`struct sk_buff *`, or no network header yet)\n",
                          packets_, without_packet_);
    }
    DataSink::onSummary(result);
  }

 private:
  pcapng::Writer writer_;
  std::ostream& err_;
  std::vector<PacketColumns> columns_;
  std::unordered_map<std::string, uint32_t> interfaces_;
  uint64_t packets_ = 0, without_packet_ = 0;
};

}  // namespace

std::unique_ptr<Sink> makePcapngSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out,
                                     std::ostream& err) {
  return std::make_unique<PcapngSink>(plan, context, out, err);
}

}  // namespace kq::engine
