// What the runtime needs to load and attach a compiled object: each BPF program's role,
// attach method and target, grouped so that one method (fentry) can fall back to another
// (kprobe), the maps with their sizes, and the event layouts. Written by compiler/lower,
// read by runtime/.
//
// The method protocol. Every program belongs to one group (what one probe target traces:
// a function, a glob, a tracepoint) and has one method number in it. A group's methods are
// numbered 0, 1, ... in the order kq prefers them; all programs of one (group, method) pair
// are loaded and attached together, and only one method of a group is ever loaded. Which
// kernel facilities a method needs follows from its programs' attach kinds (`featureOf`):
// the runtime probes those once per run and loads, for each group, the first method whose
// programs it can load here. Example, `trace tcp_* select return` (a glob at exit):
//   method 0: fentry + fexit for every function;
//   method 1: kprobe.multi + kretprobe.multi over every function;
//   method 2: kprobe + kretprobe for every function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/event_layout.h"

namespace kq::plan {

enum class Attach : uint8_t {
  Fentry, Fexit, Kprobe, Kretprobe, KprobeMulti, KretprobeMulti, TpBtf, Tracepoint, Uprobe,
  Uretprobe, PerfEvent,
};

constexpr const char* attachName(Attach attach) {
  switch (attach) {
    case Attach::Fentry: return "fentry";
    case Attach::Fexit: return "fexit";
    case Attach::Kprobe: return "kprobe";
    case Attach::Kretprobe: return "kretprobe";
    case Attach::KprobeMulti: return "kprobe.multi";
    case Attach::KretprobeMulti: return "kretprobe.multi";
    case Attach::TpBtf: return "tp_btf";
    case Attach::Tracepoint: return "tracepoint";
    case Attach::Uprobe: return "uprobe";
    case Attach::Uretprobe: return "uretprobe";
    case Attach::PerfEvent: return "perf_event";
  }
  return "?";
}

/// A kernel facility that some attach kinds need; the runtime probes each once per run.
enum class Feature : uint8_t {
  Trampoline,      // fentry and fexit (BPF trampolines)
  TpBtf,           // BTF-typed raw tracepoints
  Kprobe,          // kprobes and kretprobes through perf events
  KprobeMulti,     // kprobe.multi links (CONFIG_FPROBE)
  Tracepoint,      // classic tracepoints through perf events
  Uprobe,
  PerfEvent,       // CPU-clock perf events
};
constexpr Feature featureOf(Attach attach) {
  switch (attach) {
    case Attach::Fentry:
    case Attach::Fexit: return Feature::Trampoline;
    case Attach::Kprobe:
    case Attach::Kretprobe: return Feature::Kprobe;
    case Attach::KprobeMulti:
    case Attach::KretprobeMulti: return Feature::KprobeMulti;
    case Attach::TpBtf: return Feature::TpBtf;
    case Attach::Tracepoint: return Feature::Tracepoint;
    case Attach::Uprobe:
    case Attach::Uretprobe: return Feature::Uprobe;
    case Attach::PerfEvent: return Feature::PerfEvent;
  }
  return Feature::Tracepoint;
}

struct PlannedProgram {
  std::string function;  // the BPF program's name in the object
  Attach attach;
  /// Fentry/Kprobe/...: the kernel function. Tracepoint: `category/event`. TpBtf: event.
  /// Uprobe: the symbol in `binary`.
  std::string target;
  std::string binary;
  /// KprobeMulti (and Kprobe serving many functions): every function it attaches to, and
  /// each one's attach cookie (packet mode: which function, where its skb is).
  std::vector<std::string> symbols;
  std::vector<uint64_t> cookies;
  /// PerfEvent: a CPU clock firing every `period_ns` on CPU 0 (`interval`), or
  /// `frequency_hz` times a second on every CPU (`profile`).
  uint64_t period_ns = 0;
  uint64_t frequency_hz = 0;
  /// Programs of the same group and method load together; a group's methods are tried in
  /// order (fentry before kprobe) until one loads and attaches.
  uint32_t group = 0;
  uint32_t method = 0;
  /// Which query of the script it belongs to (`for` and `limit` end one query).
  uint32_t query = 0;
  /// Serves every query (the fork follower of -c): detached only when the session ends,
  /// whichever query ends first.
  bool whole_session = false;
  /// Bytes of BPF stack the program uses, as planned before LLVM ran.
  uint32_t stack_bytes = 0;
  /// The BPF helpers it calls (ids from include/uapi/linux/bpf.h), so a method whose
  /// helpers the kernel lacks is not chosen.
  std::vector<int> helpers;
};

/// A map of the object, with what it costs (for `--dump plan`).
struct PlannedMap {
  std::string name;
  std::string type;  // "hash", "percpu_array", "ringbuf", ...
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  uint32_t max_entries = 0;
  bool preallocated = false;
  /// The kernel memory it takes at its fullest (what bpftool calls bytes_memlock for a
  /// preallocated map): `bytes`, plus `bytes_per_cpu` on each CPU (per-CPU maps' values).
  uint64_t bytes = 0;
  uint64_t bytes_per_cpu = 0;
};

/// Why an event was lost: the slots of the lost-event map.
/// What a join's counters count, per CPU, at `PlannedJoin::counters + JoinCount`.
enum class JoinCount : uint32_t {
  Kept = 0,       // an event of the join's source kept, under a new key
  Replaced = 1,   // kept under a key already waiting (the older event is forgotten)
  Matched = 2,    // an event of the query found its key: one row
  Unmatched = 3,  // an event of the query found nothing waiting: no row
  Expired = 4,    // found an event older than `within`: no row
};
constexpr uint32_t kJoinCounts = 5;

/// A join of a query: the LRU map keeping its source's events, and its counters (kept
/// entries that were neither matched nor expired nor still waiting were evicted).
struct PlannedJoin {
  std::string name;  // `issue`
  uint32_t query = 0;
  std::string map;
  uint32_t counters = 0;  // the first of its kJoinCounts counters in `join_counts_map`
};

enum class Lost : uint32_t {
  RingBufferFull = 0,  // no room for its record
  TableFull = 1,       // a new group of an aggregate table past `kAggregateGroups`
  StashFull = 2,       // a function entry whose arguments could not be kept for its exit
  StashMissing = 3,    // a function exit whose entry was not seen (or was overwritten)
  TableNoMemory = 4,   // a new group of an aggregate table the kernel had no memory for
};
constexpr uint32_t kLostReasons = 5;
/// How many groups an aggregate table holds.
constexpr uint32_t kAggregateGroups = 10240;

struct ProgramPlan {
  std::vector<PlannedProgram> programs;
  std::vector<PlannedMap> maps;
  ProgramLayout layout;
  /// Names of maps the runtime reads: the event ring buffer, the lost-event counters (per
  /// CPU; query q's reason `why` at `q * kLostReasons + why`), and the set of followed
  /// processes (empty when not used).
  std::string events_map = "events";
  std::string lost_map = "lost";
  std::string tracked_map;
  /// Every join of every query, and the per-CPU array of their counters.
  std::vector<PlannedJoin> joins;
  std::string join_counts_map;
  /// For each group, what it traces ("ip_send_skb"), to name it in messages.
  std::vector<std::string> group_names;
  /// Why each group's methods are what they are, for `--dump plan` (by group; "" for none):
  /// "the event has a BTF handler: tp_btf, ...".
  std::vector<std::string> group_notes;
  /// The groups of `packet` probes: kq says where they attached once they are ready.
  std::vector<uint32_t> packet_groups;
};

}  // namespace kq::plan
