// What the runtime needs to load and attach a compiled object: each BPF program's role,
// attach method and target, grouped so that one method (fentry) can fall back to another
// (kprobe), and the event layouts. Written by compiler/lower, read by runtime/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/event_layout.h"

namespace kq::runtime {

enum class Attach : uint8_t {
  Fentry, Fexit, Kprobe, Kretprobe, KprobeMulti, KretprobeMulti, TpBtf, Tracepoint, Uprobe,
  Uretprobe, PerfEvent,
};

const char* attachName(Attach attach);

struct PlannedProgram {
  std::string function;  // the BPF program's name in the object
  Attach attach;
  /// Fentry/Kprobe/...: the kernel function. Tracepoint: `category/event`. TpBtf: event.
  /// Uprobe: the symbol in `binary`.
  std::string target;
  std::string binary;
  /// KprobeMulti: every function it attaches to.
  std::vector<std::string> symbols;
  /// PerfEvent: a CPU clock firing every `period_ns` on CPU 0 (`interval`), or
  /// `frequency_hz` times a second on every CPU (`profile`).
  uint64_t period_ns = 0;
  uint64_t frequency_hz = 0;
  /// Programs of the same group and method load together; a group's methods are tried in
  /// order (fentry before kprobe) until one loads and attaches.
  uint32_t group = 0;
  uint32_t method = 0;
};

/// Why an event was lost: the slots of the lost-event map.
enum class Lost : uint32_t {
  RingBufferFull = 0,  // no room for its record
  TableFull = 1,       // a new group of an aggregate table past `kAggregateGroups`
};
constexpr uint32_t kLostReasons = 2;
/// How many groups an aggregate table holds.
constexpr uint32_t kAggregateGroups = 10240;

struct ProgramPlan {
  std::vector<PlannedProgram> programs;
  ProgramLayout layout;
  /// Names of maps the runtime reads: the event ring buffer, the lost-event counters (per
  /// CPU, indexed by `Lost`), and the set of followed processes (empty when not used).
  std::string events_map = "events";
  std::string lost_map = "lost";
  std::string tracked_map;
  /// For each group, what it traces ("ip_send_skb"), to name it in messages.
  std::vector<std::string> group_names;
};

}  // namespace kq::runtime
