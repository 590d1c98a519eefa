// Aggregate queries' results as data: a map read back into a Table of rows (the group's
// key as typed values, each aggregate's value), either as a snapshot (everything counted so
// far, left in the map: what a scrape reads, cumulative) or as a drain (the intervals of
// `every` that have ended, deleted once read: what a tick prints). Sinks render tables.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/decoded_event.h"
#include "engine/decoder.h"
#include "plan/event_layout.h"

namespace kq::engine {

/// The map a table is read from: a BPF map, or a test's bytes.
class TableSource {
 public:
  virtual ~TableSource() = default;
  /// The key after `key` (null: the first); false at the end.
  virtual bool nextKey(const void* key, void* next) = 0;
  /// The value of `key`: `value_size` bytes, or one copy per CPU (`cpus()` of them, each
  /// rounded up to 8 bytes) for a per-CPU map.
  virtual bool lookup(const void* key, void* value) = 0;
  virtual void remove(const void* key) = 0;
  /// Sets `key` to `value` (a drained array entry is zeroed, not removed).
  virtual void update(const void* key, const void* value) = 0;
  virtual int cpus() const = 0;
};

/// A BPF map by its file descriptor.
class BpfTableSource : public TableSource {
 public:
  explicit BpfTableSource(int fd) : fd_(fd) {}
  bool nextKey(const void* key, void* next) override;
  bool lookup(const void* key, void* value) override;
  void remove(const void* key) override;
  void update(const void* key, const void* value) override;
  int cpus() const override;

 private:
  int fd_;
};

enum class TableRead {
  Snapshot,  // every group, left in the map
  Drain,     // with `every`: the intervals that have ended, deleted from the map
};

/// One aggregate's value in a row.
struct AggregateValue {
  /// Count, Sum, Avg, Min, Max, Top: the number (none: a min or max of no event).
  std::optional<int64_t> scalar;
  bool is_unsigned = false;  // a min or max of unsigned values
  /// Hist, Lhist: the count in each bucket, and the sum of the values counted.
  std::vector<uint64_t> buckets;
  int64_t sum = 0;
};

struct TableRow {
  std::vector<Value> keys;  // by AggregateLayout::keys
  std::vector<AggregateValue> slots;  // by AggregateLayout::slots
};

struct Table {
  const plan::AggregateLayout* layout = nullptr;
  int64_t wall_ns = 0;  // when it was read
  std::vector<TableRow> rows;  // largest first (by `top`, else the first scalar aggregate)
  size_t left_out = 0;  // groups beyond `top`'s limit or the query's `limit`
  /// The events its groups counted, all of them (those left out too), when an aggregate
  /// counts them (count, top, avg, hist, lhist); none for sums, mins and maxes alone.
  std::optional<uint64_t> events;
  /// Groups shown whose string key filled its field: longer in the kernel, so groups that
  /// differ only past it were counted as one. The byte size of the shortest such key.
  size_t cut_keys = 0;
  uint32_t cut_at_bytes = 0;
};

/// Reads `layout`'s map. `max_rows` (a query's `limit`): at most that many rows;
/// `now_ns`: CLOCK_MONOTONIC now (a drain takes the intervals before it).
Table readTable(TableSource& source, const plan::AggregateLayout& layout, TableRead read,
                RecordDecoder& decoder, int64_t now_ns, int64_t wall_ns, uint64_t max_rows = 0);

/// A group counted in user space (a replay's query): its keys, and its value laid out as
/// the kernel's map value (AggregateLayout::slots' offsets, value_size bytes).
struct CountedGroup {
  std::vector<Value> keys;
  std::vector<uint8_t> value;
};
/// Counts `x` into a group's `value` for `slot`, as the kernel's program does.
void countInto(const plan::AggregateSlot& slot, uint8_t* value, int64_t x);
/// The table of `groups`, sorted, cut and summed as readTable does a map's.
Table tableOfGroups(const plan::AggregateLayout& layout, std::vector<CountedGroup>& groups, int64_t wall_ns,
                    uint64_t max_rows = 0);

/// A histogram's bucket bounds: [lo, hi); nullopt for an open end. A power-of-two
/// histogram's buckets from 2^62 up have bounds past int64: `powerOfTwoBounds` has them.
std::pair<std::optional<int64_t>, std::optional<int64_t>> bucketBounds(const plan::AggregateSlot& s,
                                                                       uint32_t i);
/// Bucket `i` of a power-of-two histogram: below 0 for 0 (negative values), [0, 1) for 1,
/// [2^(i-2), 2^(i-1)), and no upper bound for the last, [2^63, 2^64).
std::pair<std::optional<uint64_t>, std::optional<uint64_t>> powerOfTwoBounds(uint32_t i);
bool isHistogram(const plan::AggregateSlot& s);
/// Whether the query shows how many groups it left out (it has a `top`).
bool hasTop(const plan::AggregateLayout& layout);

}  // namespace kq::engine
