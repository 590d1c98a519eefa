#include "serve/exposition.h"

#include <fmt/format.h>

#include "runtime/printed.h"
#include "serve/metric_names.h"

namespace kq::serve {
namespace {

using plan::AggregateKind;

/// A label value or HELP text as the formats escape it; bytes that are not UTF-8 become `?`
/// (a kernel string may hold anything; the formats hold UTF-8).
std::string escaped(const std::string& text, bool quote) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = n > 0 && i + n <= text.size();
    for (size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(text[i + k]) >> 6) == 2;
    if (!valid) {
      out += '?';
      ++i;
      continue;
    }
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out.append(text, i, n);
    i += n;
  }
  return out;
}

std::string labelValue(const plan::FieldLayout& key, const engine::Value& v) {
  if (v.kind == engine::ValueKind::Stack) {
    std::string frames;
    for (const std::string& f : v.frames) frames += (frames.empty() ? "" : ";") + f;
    return frames;
  }
  if (v.kind == engine::ValueKind::Record) return fmt::format("0x{:x}", v.u);
  // A string as it is: the exposition escapes it its own way.
  if (key.kind == plan::FieldKind::String) return runtime::stringBytes(v.text);
  return v.text;
}

MetricType typeOf(AggregateKind kind) {
  switch (kind) {
    case AggregateKind::Count:
    case AggregateKind::Sum:
    case AggregateKind::Top: return MetricType::Counter;
    case AggregateKind::Hist:
    case AggregateKind::Lhist: return MetricType::Histogram;
    default: return MetricType::Gauge;
  }
}

/// A number of the metric's unit: nanoseconds as seconds where `seconds`.
std::string number(int64_t n, bool is_unsigned, bool seconds) {
  if (seconds) {
    double s = (is_unsigned ? static_cast<double>(static_cast<uint64_t>(n)) : static_cast<double>(n)) / 1e9;
    return fmt::format("{}", s);
  }
  if (is_unsigned) return fmt::format("{}", static_cast<uint64_t>(n));
  return fmt::format("{}", n);
}

/// A histogram's samples: cumulative buckets up to the last that counted, then +Inf.
void addHistogram(Family& family, const plan::AggregateSlot& slot, const engine::AggregateValue& v,
                  const std::vector<std::pair<std::string, std::string>>& labels, bool seconds) {
  size_t last = 0;
  for (size_t i = 0; i < v.buckets.size(); ++i) {
    if (v.buckets[i]) last = i + 1;
  }
  uint64_t total = 0;
  for (size_t i = 0; i < v.buckets.size(); ++i) {
    total += v.buckets[i];
    auto [lo, hi] = engine::bucketBounds(slot, static_cast<uint32_t>(i));
    if (!hi || i >= last) continue;  // the open end is +Inf's
    // A hist's negative values: a bucket only where there were some (`le="-1"`).
    if (slot.kind == plan::AggregateKind::Hist && i == 0 && !v.buckets[0]) continue;
    auto with = labels;
    with.emplace_back("le", number(*hi - 1, false, seconds));
    family.samples.push_back({"_bucket", std::move(with), fmt::format("{}", total)});
  }
  auto with = labels;
  with.emplace_back("le", "+Inf");
  family.samples.push_back({"_bucket", std::move(with), fmt::format("{}", total)});
  family.samples.push_back({"_count", labels, fmt::format("{}", total)});
  family.samples.push_back({"_sum", labels, number(v.sum, false, seconds)});
}

}  // namespace

Format formatFor(const std::string& accept) {
  return accept.find("application/openmetrics-text") != std::string::npos ? Format::OpenMetrics
                                                                          : Format::Prometheus;
}

const char* contentType(Format format) {
  return format == Format::OpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                       : "text/plain; version=0.0.4; charset=utf-8";
}

std::vector<Family> tableFamilies(const engine::Table& table, const std::string& prefix,
                                  const std::string& help) {
  const plan::AggregateLayout& layout = *table.layout;
  std::vector<std::string> label_names;
  std::vector<size_t> label_keys;
  for (size_t k = 0; k < layout.keys.size(); ++k) {
    const plan::FieldLayout& key = layout.keys[k];
    if (key.hidden) continue;  // a fmt's arguments: the fmt is the label
    label_names.push_back(columnName(key.name).value_or(legalSpelling(key.name)));
    label_keys.push_back(k);
  }
  // A table of one group shows nothing until an event counts; a counter is there from the
  // start, at 0 (so that rate() and increase() see its first events).
  std::vector<engine::TableRow> zero;
  if (layout.single && table.rows.empty()) {
    engine::TableRow row;
    for (const plan::AggregateSlot& slot : layout.slots) {
      engine::AggregateValue v;
      if (typeOf(slot.kind) == MetricType::Counter) v.scalar = 0;
      if (typeOf(slot.kind) == MetricType::Histogram) {
        v.buckets.assign(slot.kind == AggregateKind::Hist ? plan::kHistBuckets : slot.buckets, 0);
      }
      row.slots.push_back(std::move(v));
    }
    zero.push_back(std::move(row));
  }
  const std::vector<engine::TableRow>& rows = zero.empty() ? table.rows : zero;
  std::vector<Family> families;
  for (size_t s = 0; s < layout.slots.size(); ++s) {
    const plan::AggregateSlot& slot = layout.slots[s];
    Family family;
    family.type = typeOf(slot.kind);
    std::string name = columnName(slot.name).value_or(legalSpelling(slot.name));
    if (family.type == MetricType::Counter && name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0) {
      name.resize(name.size() - 6);
    }
    bool in_seconds = slot.unit == "ns";
    if (in_seconds) {
      family.unit = "seconds";
      if (name.size() < 8 || name.compare(name.size() - 8, 8, "_seconds") != 0) name += "_seconds";
    }
    family.name = prefix + "_" + name;
    family.help = help;
    for (const engine::TableRow& row : rows) {
      std::vector<std::pair<std::string, std::string>> labels;
      for (size_t l = 0; l < label_keys.size(); ++l) {
        labels.emplace_back(label_names[l], labelValue(layout.keys[label_keys[l]], row.keys[label_keys[l]]));
      }
      const engine::AggregateValue& v = row.slots[s];
      if (family.type == MetricType::Histogram) {
        addHistogram(family, slot, v, labels, in_seconds);
      } else if (v.scalar) {
        family.samples.push_back({family.type == MetricType::Counter ? "_total" : "", std::move(labels),
                                  number(*v.scalar, v.is_unsigned, in_seconds)});
      }
    }
    families.push_back(std::move(family));
  }
  return families;
}

std::string render(const std::vector<Family>& families, Format format) {
  std::string out;
  bool open = format == Format::OpenMetrics;
  for (const Family& f : families) {
    const char* type = f.type == MetricType::Counter ? "counter" : f.type == MetricType::Gauge ? "gauge" : "histogram";
    // Prometheus' text format names a counter with its `_total`; OpenMetrics without.
    std::string named = !open && f.type == MetricType::Counter ? f.name + "_total" : f.name;
    out += fmt::format("# TYPE {} {}\n", named, type);
    if (!f.help.empty()) out += fmt::format("# HELP {} {}\n", named, escaped(f.help, open));
    if (open && !f.unit.empty()) out += fmt::format("# UNIT {} {}\n", named, f.unit);
    for (const Sample& s : f.samples) {
      out += f.name + s.suffix;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i) {
          if (i) out += ',';
          out += fmt::format("{}=\"{}\"", s.labels[i].first, escaped(s.labels[i].second, true));
        }
        out += '}';
      }
      out += ' ' + s.value + '\n';
    }
  }
  if (open) out += "# EOF\n";
  return out;
}

}  // namespace kq::serve
