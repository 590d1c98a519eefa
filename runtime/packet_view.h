// The per-packet view of `trace packet` (ipftrace2's): events kept as they arrive, then, when
// the session ends, grouped by packet (the journey the kernel keeps: an skb and its clones;
// in plans without one, the skb's address, a new packet after the skb is freed), each
// packet's events in time order, one line per function, with the query's values; `packet
// graph` shows the calls nested, with each call's duration.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "plan/event_layout.h"

namespace kq::runtime {

/// One event of a packet, its values already text.
struct PacketEvent {
  uint64_t time_ns = 0;  // bpf_ktime_get_ns()
  uint32_t cpu = 0;
  uint64_t skb = 0;   // the skb's address (a journey's clones have their own)
  uint32_t site = 0;  // index into PacketLayout::sites
  bool is_return = false;
  std::string reason;  // a drop's reason, or empty
  std::string verdict;  // an XDP or TC program's, or empty
  std::vector<std::string> values;
};

class PacketView {
 public:
  /// Keeps at most `max_events` (later ones are counted, not kept).
  PacketView(int64_t boot_offset_ns, std::ostream& out, size_t max_events = 1'000'000)
      : offset_(boot_offset_ns), out_(out), max_events_(max_events) {}

  /// `journey`: the packet's (PacketFacts::journey); 0 groups by `event.skb` instead.
  void add(const plan::ProbeLayout& probe, uint64_t journey, PacketEvent event);
  /// Prints every packet; says how many events were not kept.
  void print();

 private:
  struct Events {
    const plan::ProbeLayout* probe = nullptr;
    bool by_journey = false;
    std::vector<PacketEvent> events;
  };
  void printPacket(const plan::ProbeLayout& probe, const std::vector<PacketEvent>& events);

  int64_t offset_;
  std::ostream& out_;
  size_t max_events_;
  size_t kept_ = 0;
  size_t not_kept_ = 0;
  std::vector<Events> by_skb_;
  std::unordered_map<uint64_t, size_t> index_;  // (journey or skb, probe) hashed -> by_skb_
};

/// A duration for people: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
std::string durationText(uint64_t ns);

}  // namespace kq::runtime
