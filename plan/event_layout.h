// The contract between the compiler and the runtime: how each event record is laid out.
// The compiler (compiler/lower) writes one ProbeLayout per BPF program; the runtime reads
// records with it. Nothing in the formatter knows any query: everything it prints is here.
// Each struct lists its fields once, in `eachField` (plan/contract.h says what that drives).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/contract.h"

namespace kq::plan {

/// The fixed start of every record in the ring buffer.
struct EventHeader {
  uint64_t time_ns;  // bpf_ktime_get_ns(): monotonic
  uint32_t probe_id;  // index into ProgramLayout::probes
  uint32_t cpu;
  uint32_t pid;  // thread group id
  uint32_t tid;
  char comm[16];
};
static_assert(sizeof(EventHeader) == 40, "the BPF side writes 40 bytes");

/// How a field's bytes are shown: one enumerator per line of plan/field_kinds.def.
enum class FieldKind : uint8_t {
#define KQ_FIELD_KIND(Name, ReadBytes) Name,
#include "plan/field_kinds.def"
#undef KQ_FIELD_KIND
};
template <> struct EnumTable<FieldKind> {
  static constexpr const char* kWhat = "field kind";
  static constexpr size_t kCount = 0
#define KQ_FIELD_KIND(Name, ReadBytes) +1
#include "plan/field_kinds.def"
#undef KQ_FIELD_KIND
      ;
};

constexpr const char* fieldKindName(FieldKind kind) {
  switch (kind) {
#define KQ_FIELD_KIND(Name, ReadBytes) \
  case FieldKind::Name: return #Name;
#include "plan/field_kinds.def"
#undef KQ_FIELD_KIND
  }
  return "?";
}

/// The bytes the runtime reads of a field of `kind` whatever its size (field_kinds.def).
constexpr uint32_t fieldReadBytes(FieldKind kind) {
  switch (kind) {
#define KQ_FIELD_KIND(Name, ReadBytes) \
  case FieldKind::Name: return ReadBytes;
#include "plan/field_kinds.def"
#undef KQ_FIELD_KIND
  }
  return 0;
}

/// join(argv): the strings a StringList keeps, and the bytes of each (its NUL included) unless
/// `join(argv, sep, bytes)` says otherwise: a field's bytes per string are (size - 8) /
/// kJoinArgs. A count above kJoinArgs says the array went on past the strings kept.
inline constexpr uint32_t kJoinArgs = 16;
inline constexpr uint32_t kJoinArgBytes = 64;
inline constexpr uint32_t kJoinBytes = 8 + kJoinArgs * kJoinArgBytes;
/// The most bytes `join` keeps of each string.
inline constexpr uint32_t kJoinMaxArgBytes = 1024;
/// The bytes of each string a StringList field of `size` bytes keeps.
constexpr uint32_t joinArgBytes(uint32_t size) { return size < 8 ? 0 : (size - 8) / kJoinArgs; }

/// cat(path): the most bytes of a file shown; a longer file is cut, and ends in `…`.
inline constexpr uint32_t kCatBytes = 10240;

/// ntop(family, addr): the family's 8 bytes, then room for an IPv6 address.
inline constexpr uint32_t kIpAddressBytes = 24;

struct FieldLayout {
  std::string name;  // column header / JSON key
  FieldKind kind = FieldKind::Unsigned;
  uint32_t offset = 0;  // from the start of the record
  uint32_t size = 0;
  uint32_t btf_id = 0;    // Enum, Record: a type id in the running kernel's BTF
  std::string type_name;  // for typed dumps: `struct sk_buff`
  bool is_capture = false;  // from a capture list: shown ksnoop-style, `name = value`
  /// Record: the address the bytes were read from (a Pointer field), or -1.
  int32_t address_field = -1;
  /// Read by other fields only (a record's address, fmt's arguments), never shown by itself.
  bool hidden = false;
  /// Signed, Unsigned, Hex, Enum: the C type's width in bytes (the field holds 8), for
  /// `fmt`'s `%d` and `%x`, which read a value at its own width as C's printf does.
  uint8_t int_bytes = 8;
  /// Format: the format string and the indexes of the fields that fill it. WallTime:
  /// strftime's format (with `%f` for microseconds).
  std::string format;
  std::vector<int32_t> args;
  /// File: the path of the file shown.
  std::string path;
  /// StringList: what is printed between the strings.
  std::string separator;
  /// Table: the name of each number (a table literal's, or enumerators `enum_name` chose).
  std::map<int64_t, std::string> names;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("name", self.name...);
    visit("kind", self.kind...);
    visit("offset", self.offset...);
    visit("size", self.size...);
    visit("btf_id", self.btf_id...);
    visit("type_name", self.type_name...);
    visit("is_capture", self.is_capture...);
    visit("address_field", self.address_field...);
    visit("hidden", self.hidden...);
    visit("int_bytes", self.int_bytes...);
    visit("format", self.format...);
    visit("args", self.args...);
    visit("path", self.path...);
    visit("separator", self.separator...);
    visit("names", self.names...);
  }
};

/// A `packet` probe's records: which hidden fields say where the packet was seen, and the
/// places (functions, tracepoints) a site number names. The formatter groups events by
/// packet with them (ipftrace2's view), or writes ipftrace2's JSON fields.
struct PacketLayout {
  int32_t skb_field = -1;     // the skb's address: which packet
  int32_t site_field = -1;    // the index in `sites` of where it was seen
  int32_t return_field = -1;  // graph: 1 when the function returned, 0 when it was entered
  int32_t reason_field = -1;  // a drop's `enum skb_drop_reason` (0 where none)
  /// The packet's journey, kept by the kernel: the skbs that share its data (clones) or
  /// took it over have one; -1 in plans from before, whose packets are their skbs.
  int32_t journey_field = -1;
  /// An XDP or TC program's verdict there (a Table field: the program type in the high 32
  /// bits, the value in the low ones; 0 at the kernel's sites); -1 where no program is traced.
  int32_t verdict_field = -1;
  std::vector<std::string> sites;    // `ip_rcv`, `skb:kfree_skb`
  std::vector<std::string> modules;  // each site's module: `vmlinux`, `nf_conntrack`
  std::vector<bool> frees;  // each site: the skb is freed there (a later one is a new packet)
  bool graph = false;
  /// A per-CPU array of a counter per site: records lost there for a full ring buffer (the
  /// query's RingBufferFull count, by where). Empty in plans from before.
  std::string lost_map;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("skb_field", self.skb_field...);
    visit("site_field", self.site_field...);
    visit("return_field", self.return_field...);
    visit("reason_field", self.reason_field...);
    visit("?journey_field", self.journey_field...);
    visit("?verdict_field", self.verdict_field...);
    visit("sites", self.sites...);
    visit("modules", self.modules...);
    visit("frees", self.frees...);
    visit("graph", self.graph...);
    visit("?lost_map", self.lost_map...);
  }
};

struct ProbeLayout {
  std::string name;  // `ip_send_skb`, `tracepoint:net:net_dev_xmit`
  uint32_t query = 0;  // which query of the script (for scripts with several)
  uint32_t size = 0;  // bytes in a record, header included
  std::vector<FieldLayout> fields;
  /// Whether its programs write records: an aggregate query's probes update its map
  /// instead, and a join's source keeps values in the join's map.
  bool writes_records = true;
  /// Set for a `packet` probe.
  std::optional<PacketLayout> packet;
  /// A probe of many names (a syscall glob served by one program): the hidden Table field
  /// whose value names each record's probe (`syscall:openat`); -1: `name` names them all.
  int32_t name_field = -1;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("name", self.name...);
    visit("query", self.query...);
    visit("size", self.size...);
    visit("fields", self.fields...);
    visit("writes_records", self.writes_records...);
    visit("packet", self.packet...);
    visit("name_field", self.name_field...);
  }
};

/// An aggregate, kept in the kernel in a map value: one enumerator per line of
/// plan/aggregate_kinds.def.
enum class AggregateKind : uint8_t {
#define KQ_AGGREGATE_KIND(Name, Bytes, BucketBytes) Name,
#include "plan/aggregate_kinds.def"
#undef KQ_AGGREGATE_KIND
};
template <> struct EnumTable<AggregateKind> {
  static constexpr const char* kWhat = "aggregate kind";
  static constexpr size_t kCount = 0
#define KQ_AGGREGATE_KIND(Name, Bytes, BucketBytes) +1
#include "plan/aggregate_kinds.def"
#undef KQ_AGGREGATE_KIND
      ;
};

constexpr const char* aggregateKindName(AggregateKind kind) {
  switch (kind) {
#define KQ_AGGREGATE_KIND(Name, Bytes, BucketBytes) \
  case AggregateKind::Name: return #Name;
#include "plan/aggregate_kinds.def"
#undef KQ_AGGREGATE_KIND
  }
  return "?";
}

/// hist(), as bpftrace's: negative values, then [0], [1], [2,4), ... up to [2^63, 2^64).
/// Bucket i >= 2 is [2^(i-2), 2^(i-1)) (histBucketOf).
inline constexpr uint32_t kHistBuckets = 66;

/// The hist() bucket of `x` (the kernel's, aggregate_emitter.cpp, is the same).
inline uint32_t histBucketOf(int64_t x, bool is_signed) {
  if (is_signed && x < 0) return 0;
  if (x == 0) return 1;
  return 65 - static_cast<uint32_t>(__builtin_clzll(static_cast<uint64_t>(x)));
}

struct AggregateSlot {
  std::string name;  // column header: `count()`, `hist(size)`, or the `as` name
  AggregateKind kind = AggregateKind::Count;
  uint32_t offset = 0;  // in the map value
  /// Avg: a sum, then a count. Min, Max: a seen flag, then the value encoded so that the
  /// kernel keeps the largest as an unsigned number (an atomic compare-and-swap, exact
  /// under contention; see `decodeExtreme`). Hist: the sum of the values, then kHistBuckets
  /// power-of-two buckets (negative, [0], [1], [2,4), ...). Lhist: the sum, then below `lo`,
  /// `buckets - 2` buckets of `step`, then from `hi` up.
  int64_t lo = 0, hi = 0, step = 0;
  uint32_t buckets = 0;
  uint32_t limit = 0;  // Top: how many groups the table keeps
  bool is_signed = true;  // Sum, Avg, Min, Max, Hist, Lhist: the values are signed
  /// "ns": the values are nanoseconds of time (`duration`, `time - x.time`); else empty.
  std::string unit;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("name", self.name...);
    visit("kind", self.kind...);
    visit("offset", self.offset...);
    visit("lo", self.lo...);
    visit("hi", self.hi...);
    visit("step", self.step...);
    visit("buckets", self.buckets...);
    visit("limit", self.limit...);
    visit("is_signed", self.is_signed...);
    visit("unit", self.unit...);
  }
};

/// The bytes `slot` takes in its map value, as aggregate_kinds.def says: what the compiler
/// lays out and what `kq run` checks a plan's values against.
constexpr uint64_t slotBytes(const AggregateSlot& slot) {
  switch (slot.kind) {
#define KQ_AGGREGATE_KIND(Name, Bytes, BucketBytes) \
  case AggregateKind::Name: return Bytes + uint64_t{BucketBytes} * slot.buckets;
#include "plan/aggregate_kinds.def"
#undef KQ_AGGREGATE_KIND
  }
  return UINT64_MAX;
}

/// Where a histogram's buckets begin in its map value: after the sum of its values.
constexpr uint64_t bucketsOffset(const AggregateSlot& slot) {
  switch (slot.kind) {
#define KQ_AGGREGATE_KIND(Name, Bytes, BucketBytes) \
  case AggregateKind::Name: return slot.offset + uint64_t{Bytes};
#include "plan/aggregate_kinds.def"
#undef KQ_AGGREGATE_KIND
  }
  return UINT64_MAX;
}

/// Min and Max keep their value as the largest of an unsigned encoding, starting from 0:
/// a signed value is biased by 2^63 (so the smallest is 0), and Min keeps its complement.
inline uint64_t encodeExtreme(AggregateKind kind, bool is_signed, uint64_t value) {
  uint64_t biased = is_signed ? value ^ (uint64_t{1} << 63) : value;
  return kind == AggregateKind::Min ? ~biased : biased;
}
inline uint64_t decodeExtreme(AggregateKind kind, bool is_signed, uint64_t encoded) {
  uint64_t biased = kind == AggregateKind::Min ? ~encoded : encoded;
  return is_signed ? biased ^ (uint64_t{1} << 63) : biased;
}

/// A query with aggregates: one map, keyed by its `group by` keys, printed as a table at
/// each `every` tick and when the session ends. With `every`, a key starts with the
/// interval it counts in (8 bytes: bpf_ktime_get_ns() / every_ns), so a tick prints and
/// deletes finished intervals while events fill the next: no update is lost between
/// reading a table and clearing it.
struct AggregateLayout {
  uint32_t query = 0;
  std::string map;
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  std::vector<FieldLayout> keys;  // offsets within the key
  std::vector<AggregateSlot> slots;
  /// The `select` order: (true, i) for keys[i], (false, i) for slots[i].
  std::vector<std::pair<bool, uint32_t>> columns;
  uint64_t every_ns = 0;
  /// 8 when keys start with their interval (see above), else 0.
  uint32_t interval_bytes = 0;
  /// The map is per CPU (each CPU counts in its own copy of a group's value, merged when
  /// read): small values, which busy CPUs would otherwise fight over.
  bool per_cpu = false;
  /// No `group by` and no `every`: the one group is entry `entry` of an array (4-byte key),
  /// which the verifier looks up without hashing; it is printed once an event has counted
  /// in it.
  bool single = false;
  /// A keyless table's entry: the keyless tables of one object whose values are alike share
  /// one array, an entry each (one map for 50 `count()` queries, as a C author writes it).
  /// 0 in objects of kq before 2026-12-07, which had an array each.
  uint32_t entry = 0;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("query", self.query...);
    visit("map", self.map...);
    visit("key_size", self.key_size...);
    visit("value_size", self.value_size...);
    visit("keys", self.keys...);
    visit("slots", self.slots...);
    visit("columns", self.columns...);
    visit("every_ns", self.every_ns...);
    visit("interval_bytes", self.interval_bytes...);
    visit("per_cpu", self.per_cpu...);
    visit("single", self.single...);
    visit("?entry", self.entry...);
  }
};

struct ProgramLayout {
  std::vector<ProbeLayout> probes;
  std::vector<AggregateLayout> aggregates;
  uint32_t queries = 1;
  /// By query number: its name (`trace ... as opens`), or empty when it has none.
  std::vector<std::string> query_names;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("probes", self.probes...);
    visit("aggregates", self.aggregates...);
    visit("queries", self.queries...);
    visit("query_names", self.query_names...);
  }
};

/// How output names query `query` (0-based): its name, or its number from 1 (`2`).
inline std::string queryLabel(const ProgramLayout& layout, uint32_t query) {
  if (query < layout.query_names.size() && !layout.query_names[query].empty()) return layout.query_names[query];
  return std::to_string(query + 1);
}

}  // namespace kq::plan
