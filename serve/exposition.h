// Metrics as Prometheus reads them: families of samples, rendered as OpenMetrics text
// (https://github.com/OpenObservability/OpenMetrics/blob/main/specification/OpenMetrics.md)
// or, for a scraper that does not ask for it, Prometheus' text format 0.0.4. Tables become
// families here: each aggregate of an aggregate query is one family, its `group by` keys
// the labels; count() and sum() are counters, min, max and avg gauges, hist and lhist
// histograms with cumulative `le` buckets (a bucket [lo, hi) of integers is `le="hi-1"`),
// `_count` and `_sum`.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/table.h"

namespace kq::serve {

enum class MetricType { Counter, Gauge, Histogram };

struct Sample {
  std::string suffix;  // "_total", "_bucket", "_count", or ""
  std::vector<std::pair<std::string, std::string>> labels;
  std::string value;
};

struct Family {
  std::string name;  // without a counter's `_total`
  MetricType type = MetricType::Gauge;
  std::string help;
  std::vector<Sample> samples;
  std::string unit;  // "seconds", or empty
};

enum class Format { OpenMetrics, Prometheus };

/// The scraper's choice, from its Accept header: OpenMetrics when it lists it.
Format formatFor(const std::string& accept);
const char* contentType(Format format);

/// The families of one aggregate query's table. `prefix` is `kq_<script>`; `help` the
/// query's text. Every column has a name (metric_names.h; `kq serve` checks that first).
/// An aggregate of nanoseconds (its slot's unit) is exported in seconds, its family named
/// `..._seconds` with that unit.
std::vector<Family> tableFamilies(const engine::Table& table, const std::string& prefix,
                                  const std::string& help);

/// Renders `families` in order, ending with `# EOF` in OpenMetrics.
std::string render(const std::vector<Family>& families, Format format);

}  // namespace kq::serve
