#include "runtime/aggregates.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kq::runtime {

namespace {

using Json = nlohmann::ordered_json;

struct Row {
  std::vector<uint8_t> key;
  std::vector<uint8_t> value;
};


/// The value of a scalar aggregate, or nothing (min/max of no event).
std::optional<int64_t> scalar(const AggregateSlot& s, const uint8_t* value) {
  const uint8_t* p = value + s.offset;
  switch (s.kind) {
    case AggregateKind::Count:
    case AggregateKind::Top:
    case AggregateKind::Sum: return readSigned(p);
    case AggregateKind::Avg: {
      int64_t n = readSigned(p + 8);
      return n ? readSigned(p) / n : 0;
    }
    case AggregateKind::Min:
    case AggregateKind::Max:
      if (!readSigned(p)) return std::nullopt;
      return static_cast<int64_t>(decodeExtreme(s.kind, s.is_signed, readU64(p + 8)));
    default: return std::nullopt;
  }
}

/// A min or max of unsigned values: printed as unsigned (its bits are an int64_t here).
bool unsignedExtreme(const AggregateSlot& s) {
  return (s.kind == AggregateKind::Min || s.kind == AggregateKind::Max) && !s.is_signed;
}

bool isHistogram(const AggregateSlot& s) {
  return s.kind == AggregateKind::Hist || s.kind == AggregateKind::Lhist;
}

/// A histogram's bucket bounds: [lo, hi); nullopt for an open end.
std::pair<std::optional<int64_t>, std::optional<int64_t>> bucketBounds(const AggregateSlot& s, uint32_t i) {
  if (s.kind == AggregateKind::Hist) {
    if (i == 0) return {std::nullopt, 1};
    int64_t lo = int64_t{1} << (i - 1);
    return {lo, i >= 63 ? std::nullopt : std::optional<int64_t>(int64_t{1} << i)};
  }
  if (i == 0) return {std::nullopt, s.lo};
  if (i == s.buckets - 1) return {s.hi, std::nullopt};
  int64_t lo = s.lo + (i - 1) * s.step;
  return {lo, std::min(lo + s.step, s.hi)};
}

std::string bucketLabel(const AggregateSlot& s, uint32_t i) {
  auto [lo, hi] = bucketBounds(s, i);
  if (!lo) return fmt::format("(..., {})", *hi);
  if (!hi) return fmt::format("[{}, ...)", *lo);
  if (s.kind == AggregateKind::Hist && *hi - *lo == 1) return fmt::format("[{}]", *lo);
  return fmt::format("[{}, {})", *lo, *hi);
}

const AggregateSlot* topSlot(const AggregateLayout& layout) {
  for (const AggregateSlot& s : layout.slots) {
    if (s.kind == AggregateKind::Top) return &s;
  }
  return nullptr;
}

void writeU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

/// Adds the value `from` into `into`: the same group counted in two intervals.
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
      case AggregateKind::Lhist:
        for (uint32_t i = 0; i < s.buckets; ++i) add(a + 8 * i, b + 8 * i);
        break;
    }
  }
}

/// A group's value; a per-CPU map's copies merged into one.
bool lookupValue(int fd, const AggregateLayout& layout, const uint8_t* key, std::vector<uint8_t>& value) {
  if (!layout.per_cpu) return bpf_map_lookup_elem(fd, key, value.data()) == 0;
  static const int cpus = std::max(libbpf_num_possible_cpus(), 1);
  size_t stride = (layout.value_size + 7) / 8 * 8;
  std::vector<uint8_t> copies(stride * cpus);
  if (bpf_map_lookup_elem(fd, key, copies.data()) != 0) return false;
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
          if (readU64(v + 8 * i)) return true;
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
std::vector<Row> readRows(int fd, const AggregateLayout& layout, std::optional<uint64_t> before,
                          std::vector<std::vector<uint8_t>>* keys = nullptr) {
  std::vector<Row> rows;
  if (layout.single) {
    // Entry 0 of an array: a row once an event counted in it.
    Row row{std::vector<uint8_t>(layout.key_size, 0), std::vector<uint8_t>(layout.value_size)};
    if (lookupValue(fd, layout, row.key.data(), row.value) && seen(layout, row.value.data())) {
      if (keys) keys->push_back(row.key);
      rows.push_back(std::move(row));
    }
    return rows;
  }
  std::map<std::vector<uint8_t>, size_t> group_row;
  std::vector<uint8_t> key(layout.key_size), next(layout.key_size);
  void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, next.data()) == 0) {
    key = next;
    prev = key.data();
    uint64_t interval = layout.interval_bytes ? readU64(next.data()) : 0;
    if (before && interval >= *before) continue;
    Row row{next, std::vector<uint8_t>(layout.value_size)};
    if (!lookupValue(fd, layout, next.data(), row.value)) continue;
    if (keys) keys->push_back(next);
    std::vector<uint8_t> group(next.begin() + layout.interval_bytes, next.end());
    auto [it, added] = group_row.emplace(group, rows.size());
    if (added) {
      rows.push_back(std::move(row));
    } else {
      mergeValue(layout, rows[it->second].value.data(), row.value.data());
    }
  }
  // Largest first, by `top` or else the first scalar aggregate.
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
      return scalar(*order, a.value.data()).value_or(0) > scalar(*order, b.value.data()).value_or(0);
    });
  }
  return rows;
}

void printText(const std::vector<Row>& rows, size_t left_out, const AggregateLayout& layout,
               TypeDumper& types, int64_t wall_ns, bool several_queries, std::ostream& out) {
  std::string title = layout.every_ns ? clockText(wall_ns, ClockPrecision::Seconds) : "";
  if (several_queries) title += (title.empty() ? "" : " ") + fmt::format("query {}", layout.query + 1);
  if (!title.empty()) out << "@ " << title << "\n";
  // Scalar columns in `select` order; histograms beneath each row.
  std::vector<std::string> headers;
  std::vector<bool> numeric;
  for (const auto& [is_key, i] : layout.columns) {
    if (!is_key && isHistogram(layout.slots[i])) continue;
    headers.push_back(is_key ? layout.keys[i].name : layout.slots[i].name);
    numeric.push_back(!is_key || layout.keys[i].kind == FieldKind::Signed ||
                      layout.keys[i].kind == FieldKind::Unsigned);
  }
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : rows) {
    std::vector<std::string> line;
    for (const auto& [is_key, i] : layout.columns) {
      if (is_key) {
        line.push_back(fieldText(layout.keys[i], layout.keys, row.key.data(), types));
      } else if (!isHistogram(layout.slots[i])) {
        auto v = scalar(layout.slots[i], row.value.data());
        line.push_back(!v ? "-" : unsignedExtreme(layout.slots[i]) ? std::to_string(static_cast<uint64_t>(*v))
                                                               : std::to_string(*v));
      }
    }
    cells.push_back(line);
  }
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) {
    widths[c] = headers[c].size();
    for (const auto& line : cells) widths[c] = std::max(widths[c], line[c].size());
  }
  auto emit = [&](const std::vector<std::string>& line) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      if (c) text += "  ";
      text += numeric[c] ? fmt::format("{:>{}}", line[c], widths[c]) : fmt::format("{:<{}}", line[c], widths[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  if (!headers.empty()) emit(headers);
  if (rows.empty()) out << "(no events)\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!headers.empty()) emit(cells[r]);
    for (const AggregateSlot& s : layout.slots) {
      if (!isHistogram(s)) continue;
      const uint8_t* buckets = rows[r].value.data() + s.offset;
      uint32_t first = s.buckets, last = 0;
      uint64_t peak = 0;
      for (uint32_t i = 0; i < s.buckets; ++i) {
        uint64_t n = static_cast<uint64_t>(readSigned(buckets + 8 * i));
        if (!n) continue;
        first = std::min(first, i);
        last = i;
        peak = std::max(peak, n);
      }
      out << "  " << s.name << ":\n";
      for (uint32_t i = first; i <= last && first < s.buckets; ++i) {
        uint64_t n = static_cast<uint64_t>(readSigned(buckets + 8 * i));
        size_t bar = peak ? static_cast<size_t>((n * 40 + peak - 1) / peak) : 0;
        out << fmt::format("  {:<20} {:>10} |{:<40}|\n", bucketLabel(s, i), n, std::string(bar, '@'));
      }
    }
  }
  if (left_out) out << fmt::format("({} more {})\n", left_out, left_out == 1 ? "group" : "groups");
  out << "\n";
}

void printJson(const std::vector<Row>& rows, size_t left_out, const AggregateLayout& layout,
               TypeDumper& types, int64_t wall_ns, std::ostream& out) {
  Json table;
  table["time_ns"] = wall_ns;
  table["query"] = layout.query + 1;
  Json list = Json::array();
  for (const Row& row : rows) {
    Json j;
    for (const auto& [is_key, i] : layout.columns) {
      if (is_key) {
        const FieldLayout& k = layout.keys[i];
        std::string text = fieldText(k, layout.keys, row.key.data(), types);
        const uint8_t* at = row.key.data() + k.offset;
        if (k.kind == FieldKind::Signed) j[k.name] = readSigned(at);
        else if (k.kind == FieldKind::Unsigned) j[k.name] = static_cast<uint64_t>(readSigned(at));
        else if (k.kind == FieldKind::Table && !tableName(k, at)) j[k.name] = readSigned(at);
        else j[k.name] = text;
        continue;
      }
      const AggregateSlot& s = layout.slots[i];
      if (!isHistogram(s)) {
        auto v = scalar(s, row.value.data());
        j[s.name] = !v ? Json(nullptr) : unsignedExtreme(s) ? Json(static_cast<uint64_t>(*v)) : Json(*v);
        continue;
      }
      Json buckets = Json::array();
      for (uint32_t b = 0; b < s.buckets; ++b) {
        int64_t n = readSigned(row.value.data() + s.offset + 8 * b);
        if (!n) continue;
        auto [lo, hi] = bucketBounds(s, b);
        Json bucket;
        bucket["lo"] = lo ? Json(*lo) : Json(nullptr);
        bucket["hi"] = hi ? Json(*hi) : Json(nullptr);
        bucket["count"] = n;
        buckets.push_back(bucket);
      }
      j[s.name] = buckets;
    }
    list.push_back(j);
  }
  table["rows"] = list;
  if (topSlot(layout) || left_out) table["more"] = left_out;
  out << table.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
}

}  // namespace

void printAggregates(int fd, const AggregateLayout& layout, OutputFormat format,
                     TypeDumper& types, int64_t wall_ns, bool several_queries, std::ostream& out,
                     bool clear, bool skip_empty, uint64_t max_rows) {
  if (fd < 0) return;
  // A tick prints the intervals that have ended; the end of a query, everything.
  std::optional<uint64_t> before;
  if (clear && layout.interval_bytes && layout.every_ns) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + now.tv_nsec;
    before = ns / layout.every_ns;
  }
  std::vector<std::vector<uint8_t>> keys;
  std::vector<Row> rows = readRows(fd, layout, before, &keys);
  if (rows.empty() && skip_empty) return;
  // `top(n)` shows the n largest groups and says how many it left out.
  const AggregateSlot* top = topSlot(layout);
  size_t shown = top ? std::min<size_t>(rows.size(), top->limit) : rows.size();
  if (max_rows) shown = std::min<size_t>(shown, max_rows);
  std::vector<Row> kept(rows.begin(), rows.begin() + static_cast<ptrdiff_t>(shown));
  if (format == OutputFormat::Json) {
    printJson(kept, rows.size() - shown, layout, types, wall_ns, out);
  } else {
    printText(kept, rows.size() - shown, layout, types, wall_ns, several_queries, out);
  }
  if (clear) {
    // An array's entry cannot go: it is zeroed (every CPU's copy, for a per-CPU one).
    static const int cpus = std::max(libbpf_num_possible_cpus(), 1);
    std::vector<uint8_t> zeros((layout.value_size + 7) / 8 * 8 * (layout.per_cpu ? cpus : 1));
    for (const std::vector<uint8_t>& key : keys) {
      if (layout.single) {
        bpf_map_update_elem(fd, key.data(), zeros.data(), BPF_ANY);
      } else {
        bpf_map_delete_elem(fd, key.data());
      }
    }
  }
  out.flush();
}

}  // namespace kq::runtime
