#include "engine/table.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace kq::engine {

using plan::AggregateKind;
using plan::AggregateLayout;
using plan::AggregateSlot;

bool BpfTableSource::nextKey(const void* key, void* next) {
  return bpf_map_get_next_key(fd_, key, next) == 0;
}
bool BpfTableSource::lookup(const void* key, void* value) {
  return bpf_map_lookup_elem(fd_, key, value) == 0;
}
void BpfTableSource::remove(const void* key) { bpf_map_delete_elem(fd_, key); }
void BpfTableSource::update(const void* key, const void* value) {
  bpf_map_update_elem(fd_, key, value, BPF_ANY);
}
int BpfTableSource::cpus() const {
  static const int cpus = std::max(libbpf_num_possible_cpus(), 1);
  return cpus;
}

std::pair<std::optional<uint64_t>, std::optional<uint64_t>> powerOfTwoBounds(uint32_t i) {
  if (i == 0) return {std::nullopt, 0};  // negative: below 0
  if (i == 1) return {0, 1};
  uint64_t lo = uint64_t{1} << (i - 2);
  return {lo, i - 1 >= 64 ? std::nullopt : std::optional<uint64_t>(uint64_t{1} << (i - 1))};
}

bool isHistogram(const AggregateSlot& s) {
  return s.kind == AggregateKind::Hist || s.kind == AggregateKind::Lhist;
}

std::pair<std::optional<int64_t>, std::optional<int64_t>> bucketBounds(const AggregateSlot& s, uint32_t i) {
  if (s.kind == AggregateKind::Hist) {
    if (i == 0) return {std::nullopt, 0};
    if (i == 1) return {0, 1};
    int64_t lo = int64_t{1} << (i - 2);
    return {lo, i - 1 >= 63 ? std::nullopt : std::optional<int64_t>(int64_t{1} << (i - 1))};
  }
  if (i == 0) return {std::nullopt, s.lo};
  if (i == s.buckets - 1) return {s.hi, std::nullopt};
  int64_t lo = s.lo + (i - 1) * s.step;
  return {lo, std::min(lo + s.step, s.hi)};
}

namespace {

struct Row {
  std::vector<uint8_t> key;
  std::vector<uint8_t> value;
  /// A group counted in user space: its keys, already values (then `key` is empty).
  std::vector<Value>* keys = nullptr;
};

/// The value of a scalar aggregate, or nothing (min/max of no event).
std::optional<int64_t> scalar(const AggregateSlot& s, const uint8_t* value) {
  const uint8_t* p = value + s.offset;
  switch (s.kind) {
    case AggregateKind::Count:
    case AggregateKind::Top:
    case AggregateKind::Sum: return readSigned(p);
    case AggregateKind::Avg: {
      if (!s.is_signed) {  // of unsigned values: a sum of 2^63 or more is not negative
        uint64_t n = readU64(p + 8), sum = readU64(p);
        return static_cast<int64_t>(n ? sum / n : 0);
      }
      int64_t n = readSigned(p + 8), sum = readSigned(p);
      if (n == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(sum));  // INT64_MIN / -1 traps
      return n ? sum / n : 0;
    }
    case AggregateKind::Min:
    case AggregateKind::Max:
      if (!readSigned(p)) return std::nullopt;
      return static_cast<int64_t>(plan::decodeExtreme(s.kind, s.is_signed, readU64(p + 8)));
    case AggregateKind::Hist:
    case AggregateKind::Lhist: return std::nullopt;
  }
  return std::nullopt;
}

/// Whether a slot's scalar is an unsigned number (a sum, mean, min or max of unsigned values).
bool isUnsigned(const AggregateSlot& s) {
  return (s.kind == AggregateKind::Sum || s.kind == AggregateKind::Avg || s.kind == AggregateKind::Min ||
          s.kind == AggregateKind::Max) &&
         !s.is_signed;
}

const AggregateSlot* topSlot(const AggregateLayout& layout) {
  for (const AggregateSlot& s : layout.slots) {
    if (s.kind == AggregateKind::Top) return &s;
  }
  return nullptr;
}

void writeU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

/// Adds the value `from` into `into`: the same group counted in two intervals or on two CPUs.
void mergeValue(const AggregateLayout& layout, uint8_t* into, const uint8_t* from) {
  auto add = [](uint8_t* a, const uint8_t* b) { writeU64(a, readU64(a) + readU64(b)); };
  for (const AggregateSlot& s : layout.slots) {
    uint8_t* a = into + s.offset;
    const uint8_t* b = from + s.offset;
    switch (s.kind) {
      case AggregateKind::Count:
      case AggregateKind::Top:
      case AggregateKind::Sum: add(a, b); break;
      case AggregateKind::Avg:
        add(a, b);
        add(a + 8, b + 8);
        break;
      case AggregateKind::Min:
      case AggregateKind::Max: {
        // Both keep the largest encoded value (see encodeExtreme).
        if (!readU64(b)) break;  // nothing seen there
        if (!readU64(a) || readU64(b + 8) > readU64(a + 8)) std::copy(b, b + 16, a);
        break;
      }
      case AggregateKind::Hist:
      case AggregateKind::Lhist: {
        add(a, b);  // the sum
        size_t buckets = plan::bucketsOffset(s) - s.offset;
        for (uint32_t i = 0; i < s.buckets; ++i) add(a + buckets + 8 * i, b + buckets + 8 * i);
        break;
      }
    }
  }
}

/// A group's value; a per-CPU map's copies merged into one.
bool lookupValue(TableSource& source, const AggregateLayout& layout, const uint8_t* key,
                 std::vector<uint8_t>& value) {
  if (!layout.per_cpu) return source.lookup(key, value.data());
  int cpus = source.cpus();
  size_t stride = (layout.value_size + 7) / 8 * 8;
  std::vector<uint8_t> copies(stride * static_cast<size_t>(cpus));
  if (!source.lookup(key, copies.data())) return false;
  std::copy(copies.begin(), copies.begin() + layout.value_size, value.begin());
  for (int cpu = 1; cpu < cpus; ++cpu) mergeValue(layout, value.data(), copies.data() + stride * cpu);
  return true;
}

/// Whether an event has counted in `value`: a count, a histogram's bucket, an average's
/// count, min's or max's mark (a table of sums only has a count of its own, unshown).
bool seen(const AggregateLayout& layout, const uint8_t* value) {
  for (const AggregateSlot& s : layout.slots) {
    const uint8_t* v = value + s.offset;
    switch (s.kind) {
      case AggregateKind::Count:
      case AggregateKind::Top:
      case AggregateKind::Min:
      case AggregateKind::Max:
        if (readU64(v)) return true;
        break;
      case AggregateKind::Avg:
        if (readU64(v + 8)) return true;
        break;
      case AggregateKind::Hist:
      case AggregateKind::Lhist:
        for (uint32_t i = 0; i < s.buckets; ++i) {
          if (readU64(value + plan::bucketsOffset(s) + 8 * i)) return true;
        }
        break;
      case AggregateKind::Sum:
        break;
    }
  }
  return false;
}

/// The map's rows, each group once (its intervals merged); with `before`, only the rows of
/// intervals before it. `keys` gets every key read, to delete.
std::vector<Row> readRows(TableSource& source, const AggregateLayout& layout,
                          std::optional<uint64_t> before, std::vector<std::vector<uint8_t>>& keys) {
  std::vector<Row> rows;
  if (layout.single) {
    // An entry of an array: a row once an event counted in it.
    Row row{std::vector<uint8_t>(layout.key_size, 0), std::vector<uint8_t>(layout.value_size)};
    std::memcpy(row.key.data(), &layout.entry, std::min<size_t>(row.key.size(), sizeof layout.entry));
    if (lookupValue(source, layout, row.key.data(), row.value) && seen(layout, row.value.data())) {
      keys.push_back(row.key);
      rows.push_back(std::move(row));
    }
    return rows;
  }
  std::map<std::vector<uint8_t>, size_t> group_row;
  std::vector<uint8_t> key(layout.key_size), next(layout.key_size);
  void* prev = nullptr;
  while (source.nextKey(prev, next.data())) {
    key = next;
    prev = key.data();
    uint64_t interval = layout.interval_bytes ? readU64(next.data()) : 0;
    if (before && interval >= *before) continue;
    Row row{next, std::vector<uint8_t>(layout.value_size)};
    if (!lookupValue(source, layout, next.data(), row.value)) continue;
    keys.push_back(next);
    std::vector<uint8_t> group(next.begin() + layout.interval_bytes, next.end());
    auto [it, added] = group_row.emplace(group, rows.size());
    if (added) {
      rows.push_back(std::move(row));
    } else {
      mergeValue(layout, rows[it->second].value.data(), row.value.data());
    }
  }
  return rows;
}

/// Largest first, by `top` or else the first scalar aggregate.
void sortRows(const AggregateLayout& layout, std::vector<Row>& rows) {
  const AggregateSlot* order = topSlot(layout);
  for (const AggregateSlot& s : layout.slots) {
    if (order) break;
    if (!isHistogram(s)) {
      order = &s;
      break;
    }
  }
  if (order) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
      int64_t x = scalar(*order, a.value.data()).value_or(0), y = scalar(*order, b.value.data()).value_or(0);
      // A u64 above 2^63 is large, not negative.
      return isUnsigned(*order) ? static_cast<uint64_t>(x) > static_cast<uint64_t>(y) : x > y;
    });
  }
}

bool isStack(const plan::FieldLayout& f) {
  return f.kind == plan::FieldKind::KernelStack || f.kind == plan::FieldKind::UserStack;
}

/// Whether keys of different bytes may print alike: a stack (the kernel keys it by its
/// addresses), a `caller` (kept with the stack it was found on).
bool printsAlikeFromOthers(const plan::FieldLayout& f) { return isStack(f) || f.kind == plan::FieldKind::Caller; }

/// Stacks of different ids can name the same frames (a return address inside the same
/// function, or symbols kq cannot tell apart, print alike), callers of different call sites
/// or stacks the same function: groups whose keys print the same are one row.
void mergeSamePrintedKeys(const AggregateLayout& layout, std::vector<Row>& rows, RecordDecoder& decoder) {
  if (std::none_of(layout.keys.begin(), layout.keys.end(), printsAlikeFromOthers)) return;
  std::map<std::vector<std::string>, size_t> first;
  std::vector<Row> merged;
  Value v;
  for (Row& row : rows) {
    std::vector<std::string> texts;
    for (const plan::FieldLayout& k : layout.keys) {
      decoder.keyValue(k, layout.keys, row.key.data(), v);
      texts.push_back(v.text);
    }
    auto [it, added] = first.emplace(std::move(texts), merged.size());
    if (added) {
      merged.push_back(std::move(row));
    } else {
      mergeValue(layout, merged[it->second].value.data(), row.value.data());
    }
  }
  rows = std::move(merged);
}

/// The events a group counted, from its first aggregate that counts them.
std::optional<uint64_t> eventsOf(const AggregateLayout& layout, const uint8_t* value) {
  for (const AggregateSlot& s : layout.slots) {
    const uint8_t* v = value + s.offset;
    switch (s.kind) {
      case AggregateKind::Count:
      case AggregateKind::Top: return readU64(v);
      case AggregateKind::Avg: return readU64(v + 8);
      case AggregateKind::Hist:
      case AggregateKind::Lhist: {
        uint64_t n = 0;
        for (uint32_t i = 0; i < s.buckets; ++i) n += readU64(value + plan::bucketsOffset(s) + 8 * i);
        return n;
      }
      case AggregateKind::Sum:
      case AggregateKind::Min:
      case AggregateKind::Max: break;
    }
  }
  return std::nullopt;
}

}  // namespace

bool hasTop(const AggregateLayout& layout) { return topSlot(layout) != nullptr; }

namespace {

/// `rows` sorted, cut to what `top` and `limit` show, and their values read: a table.
Table tableOfRows(const AggregateLayout& layout, std::vector<Row>& rows, RecordDecoder* decoder, int64_t wall_ns,
                  uint64_t max_rows) {
  Table table;
  table.layout = &layout;
  table.wall_ns = wall_ns;
  sortRows(layout, rows);
  for (const Row& row : rows) {
    std::optional<uint64_t> n = eventsOf(layout, row.value.data());
    if (!n) break;
    table.events = table.events.value_or(0) + *n;
  }
  // A table of counts with no row counted none (not "unknown", as one of sums only is).
  bool counts = std::any_of(layout.slots.begin(), layout.slots.end(), [](const AggregateSlot& s) {
    return s.kind != AggregateKind::Sum && s.kind != AggregateKind::Min && s.kind != AggregateKind::Max;
  });
  if (rows.empty() && counts) table.events = 0;
  // `top(n)` shows the n largest groups and says how many it left out.
  const AggregateSlot* top = topSlot(layout);
  size_t shown = top ? std::min<size_t>(rows.size(), top->limit) : rows.size();
  if (max_rows) shown = std::min<size_t>(shown, max_rows);
  table.left_out = rows.size() - shown;
  table.rows.resize(shown);
  for (size_t r = 0; r < shown; ++r) {
    TableRow& row = table.rows[r];
    row.keys.resize(layout.keys.size());
    bool cut = false;
    for (size_t k = 0; k < layout.keys.size(); ++k) {
      if (rows[r].keys) {
        row.keys[k] = (*rows[r].keys)[k];
      } else {
        decoder->keyValue(layout.keys[k], layout.keys, rows[r].key.data(), row.keys[k]);
      }
      if (row.keys[k].cut) {
        cut = true;
        uint32_t size = layout.keys[k].size;
        table.cut_at_bytes = table.cut_at_bytes ? std::min(table.cut_at_bytes, size) : size;
      }
    }
    table.cut_keys += cut;
    row.slots.resize(layout.slots.size());
    for (size_t s = 0; s < layout.slots.size(); ++s) {
      const AggregateSlot& slot = layout.slots[s];
      AggregateValue& v = row.slots[s];
      if (isHistogram(slot)) {
        v.sum = readSigned(rows[r].value.data() + slot.offset);
        v.buckets.resize(slot.buckets);
        for (uint32_t b = 0; b < slot.buckets; ++b) {
          v.buckets[b] = readU64(rows[r].value.data() + plan::bucketsOffset(slot) + 8 * b);
        }
      } else {
        v.scalar = scalar(slot, rows[r].value.data());
        v.is_unsigned = isUnsigned(slot);
      }
    }
  }
  return table;
}

}  // namespace

Table readTable(TableSource& source, const AggregateLayout& layout, TableRead read,
                RecordDecoder& decoder, int64_t now_ns, int64_t wall_ns, uint64_t max_rows) {
  // A drain takes the intervals that have ended; a snapshot (or the end), everything.
  std::optional<uint64_t> before;
  bool drain = read == TableRead::Drain;
  if (drain && layout.interval_bytes && layout.every_ns) {
    before = static_cast<uint64_t>(now_ns) / layout.every_ns;
  }
  std::vector<std::vector<uint8_t>> keys;
  std::vector<Row> rows = readRows(source, layout, before, keys);
  mergeSamePrintedKeys(layout, rows, decoder);
  Table table = tableOfRows(layout, rows, &decoder, wall_ns, max_rows);
  if (drain) {
    // An array's entry cannot go: it is zeroed (every CPU's copy, for a per-CPU one).
    std::vector<uint8_t> zeros((layout.value_size + 7) / 8 * 8 *
                               static_cast<size_t>(layout.per_cpu ? source.cpus() : 1));
    for (const std::vector<uint8_t>& key : keys) {
      if (layout.single) {
        source.update(key.data(), zeros.data());
      } else {
        source.remove(key.data());
      }
    }
  }
  return table;
}

void countInto(const AggregateSlot& s, uint8_t* value, int64_t x) {
  uint8_t* p = value + s.offset;
  auto add = [](uint8_t* at, uint64_t n) { writeU64(at, readU64(at) + n); };
  switch (s.kind) {
    case AggregateKind::Count:
    case AggregateKind::Top: add(p, 1); break;
    case AggregateKind::Sum: add(p, static_cast<uint64_t>(x)); break;
    case AggregateKind::Avg:
      add(p, static_cast<uint64_t>(x));
      add(p + 8, 1);
      break;
    case AggregateKind::Min:
    case AggregateKind::Max: {
      uint64_t encoded = plan::encodeExtreme(s.kind, s.is_signed, static_cast<uint64_t>(x));
      if (!readU64(p) || encoded > readU64(p + 8)) writeU64(p + 8, encoded);
      writeU64(p, 1);
      break;
    }
    case AggregateKind::Hist:
    case AggregateKind::Lhist: {
      add(p, static_cast<uint64_t>(x));
      uint32_t bucket = 0;
      if (s.kind == AggregateKind::Hist) {
        bucket = plan::histBucketOf(x, s.is_signed);
      } else if (!s.is_signed && s.lo >= 0) {  // as the kernel's (aggregate_emitter.cpp)
        auto u = static_cast<uint64_t>(x);
        bucket = u < static_cast<uint64_t>(s.lo)    ? 0
                 : u >= static_cast<uint64_t>(s.hi) ? s.buckets - 1
                                                    : 1 + static_cast<uint32_t>((u - s.lo) / s.step);
      } else if (x < s.lo) {
        bucket = 0;
      } else if (x >= s.hi) {
        bucket = s.buckets - 1;
      } else {
        bucket = 1 + static_cast<uint32_t>((x - s.lo) / s.step);
      }
      bucket = std::min(bucket, s.buckets - 1);
      add(value + plan::bucketsOffset(s) + 8 * bucket, 1);
      break;
    }
  }
}

Table tableOfGroups(const AggregateLayout& layout, std::vector<CountedGroup>& groups, int64_t wall_ns,
                    uint64_t max_rows) {
  std::vector<Row> rows;
  rows.reserve(groups.size());
  // Each group is one an event counted in.
  for (CountedGroup& g : groups) rows.push_back(Row{{}, g.value, &g.keys});
  return tableOfRows(layout, rows, nullptr, wall_ns, max_rows);
}

}  // namespace kq::engine
