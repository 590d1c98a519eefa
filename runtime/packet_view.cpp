#include "runtime/packet_view.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/printed.h"

namespace kq::runtime {

std::string durationText(uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1'000'000) return fmt::format("{:.1f} µs", ns / 1e3);
  if (ns < 1'000'000'000) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

namespace {

/// Columns of text, each as wide as its widest cell; the last one is not padded.
std::string columnsText(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i >= width.size()) width.push_back(0);
      // `µ` is two bytes and one column.
      size_t shown = row[i].size() - std::count(row[i].begin(), row[i].end(), '\xc2');
      width[i] = std::max(width[i], shown);
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      size_t shown = row[i].size() - std::count(row[i].begin(), row[i].end(), '\xc2');
      std::string pad(width[i] - shown, ' ');
      bool last = i + 1 == row.size();
      line += (i < right.size() && right[i]) ? pad + row[i] : row[i] + (last ? "" : pad);
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

void PacketView::add(const plan::ProbeLayout& probe, uint64_t journey, PacketEvent event) {
  if (kept_ >= max_events_) {
    ++not_kept_;
    return;
  }
  ++kept_;
  // A probe of another query may see the same packet: keyed by both. A journey's number is
  // a time, never an address: the two cannot meet.
  uint64_t packet = journey ? journey : event.skb;
  uint64_t key = packet ^ (reinterpret_cast<uintptr_t>(&probe) * 0x9e3779b97f4a7c15ull);
  auto [it, added] = index_.emplace(key, by_skb_.size());
  if (added) by_skb_.push_back({&probe, journey != 0, {}});
  by_skb_[it->second].events.push_back(std::move(event));
}

void PacketView::print() {
  // Each packet's events in time order. An skb's address alone (a plan without journeys) is
  // cut where the skb was freed: a packet of its own then, the address being reused.
  struct Packet {
    const plan::ProbeLayout* probe;
    std::vector<PacketEvent> events;
  };
  std::vector<Packet> packets;
  for (Events& e : by_skb_) {
    std::stable_sort(e.events.begin(), e.events.end(),
                     [](const PacketEvent& a, const PacketEvent& b) { return a.time_ns < b.time_ns; });
    const plan::PacketLayout& layout = *e.probe->packet;
    packets.push_back({e.probe, {}});
    bool freed = false;
    for (PacketEvent& ev : e.events) {
      // After the skb was freed, the next function entered is another packet's (the returns
      // of the calls it was freed in are still this one's).
      if (freed && !ev.is_return) {
        packets.push_back({e.probe, {}});
        freed = false;
      }
      freed = !e.by_journey && (freed || (ev.site < layout.frees.size() && layout.frees[ev.site] && !ev.is_return));
      packets.back().events.push_back(std::move(ev));
    }
  }
  std::sort(packets.begin(), packets.end(), [](const Packet& a, const Packet& b) {
    return a.events.front().time_ns < b.events.front().time_ns;
  });
  for (size_t i = 0; i < packets.size(); ++i) {
    if (i) out_ << "\n";
    printPacket(*packets[i].probe, packets[i].events);
  }
  if (not_kept_) {
    out_ << fmt::format("\nkq: {} later events not shown (the per-packet view keeps {}; -f json "
                        "streams every event)\n",
                        not_kept_, max_events_);
  }
  by_skb_.clear();
  index_.clear();
}

void PacketView::printPacket(const plan::ProbeLayout& probe, const std::vector<PacketEvent>& events) {
  const plan::PacketLayout& layout = *probe.packet;
  // A journey of several skbs (a clone, a copy that took the data over) says which each
  // event was of, the first skb being the packet's name.
  uint64_t skb = events.front().skb;
  std::vector<uint64_t> skbs{skb};
  for (const PacketEvent& e : events) {
    if (std::find(skbs.begin(), skbs.end(), e.skb) == skbs.end()) skbs.push_back(e.skb);
  }
  bool branches = skbs.size() > 1;
  uint64_t first = events.front().time_ns;
  uint64_t last = events.back().time_ns;
  bool calls = layout.graph;
  size_t shown = calls ? std::count_if(events.begin(), events.end(),
                                       [](const PacketEvent& e) { return !e.is_return; })
                       : events.size();
  out_ << fmt::format("packet 0x{:x}: {} {} in {}{}\n", skb, shown,
                      calls ? (shown == 1 ? "call" : "calls") : (shown == 1 ? "event" : "events"),
                      durationText(last - first),
                      branches ? fmt::format(", on {} skbs", skbs.size()) : "");
  std::vector<std::string> header{"TIME", "ELAPSED", "CPU"};
  if (branches) header.push_back("SKB");
  if (calls) header.push_back("DURATION");
  header.push_back("FUNCTION");
  for (const plan::FieldLayout& f : probe.fields) {
    if (!f.hidden && !f.is_capture) header.push_back(f.name);
  }
  std::vector<std::vector<std::string>> rows{header};
  // Function graph: entries open a level, returns close it; a call with nothing inside
  // is one line, `name();`.
  std::vector<uint32_t> open;
  for (size_t i = 0; i < events.size(); ++i) {
    const PacketEvent& e = events[i];
    std::string site = e.site < layout.sites.size() ? layout.sites[e.site] : fmt::format("site {}", e.site);
    if (e.site < layout.modules.size() && layout.modules[e.site] != "vmlinux") {
      site += " [" + layout.modules[e.site] + "]";
    }
    std::vector<std::string> row{clockText(static_cast<int64_t>(e.time_ns) + offset_, ClockPrecision::Microseconds),
                                 "+" + durationText(e.time_ns - first), std::to_string(e.cpu)};
    if (branches) row.push_back(fmt::format("0x{:x}", e.skb));
    if (calls) {
      std::string indent(2 * open.size(), ' ');
      bool leaf = !e.is_return && i + 1 < events.size() && events[i + 1].is_return &&
                  events[i + 1].site == e.site;
      if (leaf) {
        row.push_back(durationText(events[i + 1].time_ns - e.time_ns));
        row.push_back(indent + site + "();");
        ++i;
      } else if (!e.is_return) {
        row.push_back("");
        row.push_back(indent + site + "() {");
        open.push_back(e.site);
      } else {
        // Its entry: the latest open call of the same function.
        auto at = std::find(open.rbegin(), open.rend(), e.site);
        uint64_t took = 0;
        if (at != open.rend()) {
          size_t depth = open.size() - 1 - static_cast<size_t>(at - open.rbegin());
          open.resize(depth);
          for (size_t j = i; j-- > 0;) {
            if (events[j].site == e.site && !events[j].is_return) {
              took = e.time_ns - events[j].time_ns;
              break;
            }
          }
        }
        row.push_back(took ? durationText(took) : "");
        row.push_back(std::string(2 * open.size(), ' ') + "}  /* " + site + " */");
      }
    } else {
      row.push_back(site);
    }
    for (const std::string& v : e.values) row.push_back(v);
    if (!e.reason.empty()) row.push_back("drop: " + e.reason);
    if (!e.verdict.empty()) row.push_back("verdict: " + e.verdict);
    rows.push_back(std::move(row));
  }
  std::vector<bool> right{false, true, true};
  if (branches) right.push_back(false);
  if (calls) right.push_back(true);
  out_ << columnsText(rows, right);
}

}  // namespace kq::runtime
