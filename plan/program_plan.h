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

/// A kernel facility that some attach kinds need; the runtime probes each once per run.
enum class Feature : uint8_t {
  Trampoline,      // fentry and fexit (BPF trampolines)
  TpBtf,           // BTF-typed raw tracepoints
  Kprobe,          // kprobes and kretprobes through perf events
  KprobeMulti,     // kprobe.multi links (CONFIG_FPROBE)
  Tracepoint,      // classic tracepoints through perf events
  Uprobe,
  PerfEvent,       // CPU-clock perf events
  RunOnce,         // raw_tp programs run by BPF_PROG_TEST_RUN (`begin`, `end`)
  Iter,            // BPF iterators (tracing programs of BPF_TRACE_ITER)
};

/// How a program attaches: one enumerator per line of plan/attach_kinds.def.
enum class Attach : uint8_t {
#define KQ_ATTACH(Name, Text, Needs) Name,
#include "plan/attach_kinds.def"
#undef KQ_ATTACH
};
template <> struct EnumTable<Attach> {
  static constexpr const char* kWhat = "attach kind";
  static constexpr size_t kCount = 0
#define KQ_ATTACH(Name, Text, Needs) +1
#include "plan/attach_kinds.def"
#undef KQ_ATTACH
      ;
};

constexpr const char* attachName(Attach attach) {
  switch (attach) {
#define KQ_ATTACH(Name, Text, Needs) \
  case Attach::Name: return Text;
#include "plan/attach_kinds.def"
#undef KQ_ATTACH
  }
  return "?";
}

constexpr Feature featureOf(Attach attach) {
  switch (attach) {
#define KQ_ATTACH(Name, Text, Needs) \
  case Attach::Name: return Feature::Needs;
#include "plan/attach_kinds.def"
#undef KQ_ATTACH
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
  /// PerfEvent: the event (perf_event_attr's type and config: by default the CPU clock),
  /// sampled every `period_ns` events (nanoseconds for the clocks) or `frequency_hz` times a
  /// second, on CPU 0 (`interval`) or on every CPU (`every_cpu`, as a frequency implies:
  /// `profile`, `software:`, `hardware:`).
  uint64_t period_ns = 0;
  uint64_t frequency_hz = 0;
  uint32_t perf_type = 1;    // PERF_TYPE_SOFTWARE
  uint64_t perf_config = 0;  // PERF_COUNT_SW_CPU_CLOCK
  bool every_cpu = false;
  /// Uprobe at a file offset rather than a symbol (`usdt:`, whose `target` names the probe
  /// as `provider:name`), with the offset of a semaphore the kernel counts its uprobes in
  /// (0 for none), as USDT probes guarded by `PROBE_ENABLED()` need.
  uint64_t uprobe_offset = 0;
  uint64_t ref_ctr_offset = 0;
  /// A kprobe this many bytes into `target` (`vfs_read+0x10`), not at its entry.
  uint64_t kprobe_offset = 0;
  /// A watchpoint (perf_type PERF_TYPE_BREAKPOINT): its address, bytes and HW_BREAKPOINT_*
  /// kind. At a user-space address it is opened in the traced process (-p, -c).
  uint64_t bp_addr = 0;
  uint32_t bp_len = 0;
  uint32_t bp_type = 0;
  /// Fentry/Fexit on a loaded BPF program (`bpf:`): its id, and `target` its function.
  uint32_t attach_program = 0;
  /// Programs of the same group and method load together; a group's methods are tried in
  /// order (fentry before kprobe) until one loads and attaches.
  uint32_t group = 0;
  uint32_t method = 0;
  /// The queries of the script whose parts it runs, each in turn (one program serves every
  /// query on one place). A program of several queries checks, where each query's part
  /// starts to act, that query's word in `ProgramPlan::stops_map` (but for a part that only
  /// counts in a keyless table: read once at its query's end, it may count on unseen):
  /// ending one query (`for`, `limit`, the REPL's `stop`) sets its word, and detaches the
  /// program once all of its queries ended.
  std::vector<uint32_t> queries;
  /// Serves every query (the fork follower of -c): detached only when the session ends,
  /// whichever query ends first.
  bool whole_session = false;
  /// Checks its queries' words in the stops map even when it serves one query (a program
  /// whose detach waits for the kernel, `detachWaits`): with its words set it does nothing,
  /// so the session ends without waiting for its detach (runtime/link_reaper.h).
  bool checks_stops = false;
  /// Bytes of BPF stack the program uses, as planned before LLVM ran.
  uint32_t stack_bytes = 0;
  /// The BPF helpers it calls (ids from include/uapi/linux/bpf.h), so a method whose
  /// helpers the kernel lacks is not chosen.
  std::vector<int> helpers;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("function", self.function...);
    visit("attach", self.attach...);
    visit("target", self.target...);
    visit("binary", self.binary...);
    visit("symbols", self.symbols...);
    visit("cookies", self.cookies...);
    visit("period_ns", self.period_ns...);
    visit("frequency_hz", self.frequency_hz...);
    visit("group", self.group...);
    visit("method", self.method...);
    visit("queries", self.queries...);
    visit("whole_session", self.whole_session...);
    visit("stack_bytes", self.stack_bytes...);
    visit("helpers", self.helpers...);
    visit("?perf_type", self.perf_type...);
    visit("?perf_config", self.perf_config...);
    visit("?every_cpu", self.every_cpu...);
    visit("?uprobe_offset", self.uprobe_offset...);
    visit("?ref_ctr_offset", self.ref_ctr_offset...);
    visit("?kprobe_offset", self.kprobe_offset...);
    visit("?bp_addr", self.bp_addr...);
    visit("?bp_len", self.bp_len...);
    visit("?bp_type", self.bp_type...);
    visit("?attach_program", self.attach_program...);
    visit("?checks_stops", self.checks_stops...);
  }
};

/// Whether detaching a program attached this way waits for the kernel: a perf event's
/// (classic tracepoint, kprobe, uprobe, sampling) waits for an RCU grace period, under a
/// lock all of them take (about 40 ms each, one after another; a uprobe's 100 ms), and a
/// multi-probe link's for its own. Trampolines and tp_btf links detach at once.
constexpr bool detachWaits(Attach attach) {
  switch (attach) {
    case Attach::Kprobe:
    case Attach::Kretprobe:
    case Attach::KprobeMulti:
    case Attach::KretprobeMulti:
    case Attach::Tracepoint:
    case Attach::Uprobe:
    case Attach::Uretprobe:
    case Attach::PerfEvent:
      return true;
    default:
      return false;
  }
}

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

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("name", self.name...);
    visit("type", self.type...);
    visit("key_size", self.key_size...);
    visit("value_size", self.value_size...);
    visit("max_entries", self.max_entries...);
    visit("preallocated", self.preallocated...);
    visit("bytes", self.bytes...);
    visit("bytes_per_cpu", self.bytes_per_cpu...);
  }
};

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

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("name", self.name...);
    visit("query", self.query...);
    visit("map", self.map...);
    visit("counters", self.counters...);
  }
};

/// Why an event was lost: each query has kLostReasons counters in the lost-event map.
enum class Lost : uint32_t {
  RingBufferFull = 0,  // no room for its record
  TableFull = 1,       // a new group of an aggregate table past its groups (tableGroups)
  StashFull = 2,       // a function entry whose arguments could not be kept for its exit
  StashMissing = 3,    // a function exit whose entry was not seen (or was overwritten)
  TableNoMemory = 4,   // a new group of an aggregate table the kernel had no memory for
};
constexpr uint32_t kLostReasons = 5;
/// How many groups an aggregate table holds, unless its script says (`config max_groups`).
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
  /// An array of one element holding a 32-bit word per query (mapped, BPF_F_MMAPABLE), all
  /// 0 when loaded: a program of several queries looks the element up once and skips the
  /// part of each query whose word is not 0 (empty when no program is shared). An element
  /// a query, each of 4 bytes (objects an earlier kq built), is read as well.
  std::string stops_map;
  /// An array of one 64-bit word the loader sets, before attaching, to the CLOCK_MONOTONIC
  /// nanoseconds the session started at (`elapsed`; empty when not used).
  std::string start_map;
  /// An array of one 32-bit word, how the reader reads the event ring: 0 while it sleeps
  /// until a record wakes it (each record is submitted as the kernel chooses: it wakes a
  /// reader that has read everything); otherwise it reads on a short timer, and the word is
  /// how many bytes waiting in the ring wake it at once (the record that takes the ring past
  /// them is submitted with BPF_RB_FORCE_WAKEUP, every other with BPF_RB_NO_WAKEUP). Empty
  /// in objects made before it, whose records wake the reader as the kernel chooses.
  std::string pace_map;
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
  /// Groups that may attach nothing here (a packet query's XDP and TC programs, traced by
  /// fexit): where no method of one works, the rest loads without it, and kq says why.
  std::vector<uint32_t> optional_groups;
  /// For each of packet_groups, the optional group of its XDP and TC programs (-1: none).
  std::vector<int32_t> packet_program_groups;
  /// Likewise, the optional group of its netfilter verdicts (nf_hook_slow's fexit; -1: none).
  std::vector<int32_t> packet_netfilter_groups;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("programs", self.programs...);
    visit("maps", self.maps...);
    visit(kInlined, self.layout...);
    visit("events_map", self.events_map...);
    visit("lost_map", self.lost_map...);
    visit("tracked_map", self.tracked_map...);
    visit("stops_map", self.stops_map...);
    visit("joins", self.joins...);
    visit("join_counts_map", self.join_counts_map...);
    visit("group_names", self.group_names...);
    visit("group_notes", self.group_notes...);
    visit("packet_groups", self.packet_groups...);
    visit("?optional_groups", self.optional_groups...);
    visit("?packet_program_groups", self.packet_program_groups...);
    visit("?packet_netfilter_groups", self.packet_netfilter_groups...);
    visit("?start_map", self.start_map...);
    visit("?pace_map", self.pace_map...);
  }
};

/// How many groups `table` holds: its map's entries (1 for a table of one group).
inline uint32_t tableGroups(const ProgramPlan& plan, const AggregateLayout& table) {
  for (const PlannedMap& m : plan.maps) {
    if (m.name == table.map) return m.max_entries;
  }
  return kAggregateGroups;
}

}  // namespace kq::plan
