// Tables as Prometheus reads them (serve/exposition.h), from tables made by hand: the
// families, their samples and both text formats; and the names kq serve gives them.
#include <gtest/gtest.h>

#include "serve/exposition.h"
#include "serve/metric_names.h"
#include "serve/remote_write.h"
#include "serve/serve_check.h"

#include <cstring>

namespace kq::serve {
namespace {

using plan::AggregateKind;

plan::AggregateSlot slot(std::string name, AggregateKind kind) {
  plan::AggregateSlot s;
  s.name = std::move(name);
  s.kind = kind;
  if (kind == AggregateKind::Hist) s.buckets = plan::kHistBuckets;
  return s;
}

plan::FieldLayout key(std::string name) {
  plan::FieldLayout f;
  f.name = std::move(name);
  f.kind = plan::FieldKind::String;
  f.size = 16;
  return f;
}

engine::Value text(std::string s) {
  engine::Value v;
  v.kind = engine::ValueKind::String;
  v.text = std::move(s);
  return v;
}

engine::AggregateValue scalar(int64_t n) {
  engine::AggregateValue v;
  v.scalar = n;
  return v;
}

TEST(Exposition, CountersAreLabelledByTheirKeys) {
  plan::AggregateLayout layout;
  layout.keys = {key("comm")};
  layout.slots = {slot("count()", AggregateKind::Count), slot("bytes", AggregateKind::Sum)};
  engine::Table table;
  table.layout = &layout;
  table.rows.push_back({{text("bash")}, {scalar(3), scalar(4096)}});
  table.rows.push_back({{text("a\"b\\c\nd\xff")}, {scalar(1), scalar(0)}});
  std::vector<Family> families = tableFamilies(table, "kq_io", "trace x");
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(render(families, Format::Prometheus),
            "# TYPE kq_io_count_total counter\n"
            "# HELP kq_io_count_total trace x\n"
            "kq_io_count_total{comm=\"bash\"} 3\n"
            "kq_io_count_total{comm=\"a\\\"b\\\\c\\nd?\"} 1\n"
            "# TYPE kq_io_bytes_total counter\n"
            "# HELP kq_io_bytes_total trace x\n"
            "kq_io_bytes_total{comm=\"bash\"} 4096\n"
            "kq_io_bytes_total{comm=\"a\\\"b\\\\c\\nd?\"} 0\n");
  // OpenMetrics names the family without `_total`, and ends.
  std::string open = render(families, Format::OpenMetrics);
  EXPECT_NE(open.find("# TYPE kq_io_count counter\n"), std::string::npos) << open;
  EXPECT_NE(open.find("kq_io_count_total{comm=\"bash\"} 3\n"), std::string::npos) << open;
  EXPECT_EQ(open.substr(open.size() - 6), "# EOF\n");
}

TEST(Exposition, HistogramBucketsAreCumulativeWithInclusiveBounds) {
  plan::AggregateLayout layout;
  layout.slots = {slot("size", AggregateKind::Hist)};
  layout.single = true;
  engine::AggregateValue h;
  h.buckets.assign(plan::kHistBuckets, 0);
  h.buckets[1] = 1;  // 0
  h.buckets[2] = 2;  // 1
  h.buckets[4] = 4;  // [4, 8)
  h.sum = 0 + 2 * 1 + 4 + 5 + 6 + 7;
  engine::Table table;
  table.layout = &layout;
  table.rows.push_back({{}, {h}});
  EXPECT_EQ(render(tableFamilies(table, "kq_t", ""), Format::Prometheus),
            "# TYPE kq_t_size histogram\n"
            "kq_t_size_bucket{le=\"0\"} 1\n"
            "kq_t_size_bucket{le=\"1\"} 3\n"
            "kq_t_size_bucket{le=\"3\"} 3\n"
            "kq_t_size_bucket{le=\"7\"} 7\n"
            "kq_t_size_bucket{le=\"+Inf\"} 7\n"
            "kq_t_size_count 7\n"
            "kq_t_size_sum 24\n");
}

TEST(Exposition, NanosecondsAreSecondsWithTheirUnit) {
  plan::AggregateLayout layout;
  layout.slots = {slot("lat", AggregateKind::Hist), slot("time_spent", AggregateKind::Sum)};
  for (plan::AggregateSlot& s : layout.slots) s.unit = "ns";
  layout.single = true;
  engine::AggregateValue h;
  h.buckets.assign(plan::kHistBuckets, 0);
  h.buckets[26] = 2;  // [2^24, 2^25) ns: 16.8 ms to 33.6 ms
  h.sum = 50'000'000;
  engine::Table table;
  table.layout = &layout;
  table.rows.push_back({{}, {h, scalar(40'000'000)}});
  std::string open = render(tableFamilies(table, "kq_t", ""), Format::OpenMetrics);
  EXPECT_NE(open.find("# TYPE kq_t_lat_seconds histogram\n# UNIT kq_t_lat_seconds seconds\n"), std::string::npos) << open;
  EXPECT_NE(open.find("kq_t_lat_seconds_bucket{le=\"0.016777215\"} 0\n"), std::string::npos) << open;
  EXPECT_NE(open.find("kq_t_lat_seconds_bucket{le=\"0.033554431\"} 2\n"), std::string::npos) << open;
  EXPECT_NE(open.find("kq_t_lat_seconds_sum 0.05\n"), std::string::npos) << open;
  EXPECT_NE(open.find("kq_t_time_spent_seconds_total 0.04\n"), std::string::npos) << open;
}

TEST(Exposition, AOneGroupCounterIsZeroBeforeItsFirstEvent) {
  plan::AggregateLayout layout;
  layout.slots = {slot("count()", AggregateKind::Count), slot("max(len)", AggregateKind::Max)};
  layout.single = true;
  engine::Table table;
  table.layout = &layout;
  EXPECT_EQ(render(tableFamilies(table, "kq_t", ""), Format::Prometheus),
            "# TYPE kq_t_count_total counter\nkq_t_count_total 0\n# TYPE kq_t_max_len gauge\n");
}

TEST(Exposition, TheScraperChoosesTheFormat) {
  EXPECT_EQ(formatFor("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            Format::OpenMetrics);
  EXPECT_EQ(formatFor("text/plain"), Format::Prometheus);
  EXPECT_EQ(formatFor(""), Format::Prometheus);
}

TEST(MetricNames, ColumnsNameTheirMetricsAndLabels) {
  EXPECT_EQ(columnName("count()"), "count");
  EXPECT_EQ(columnName("comm"), "comm");
  EXPECT_EQ(columnName("str(filename)"), std::nullopt);
  EXPECT_EQ(columnName("__reserved"), std::nullopt);
  EXPECT_EQ(columnName("9lives"), std::nullopt);
  EXPECT_EQ(legalSpelling("str(filename)"), "str_filename");
  EXPECT_EQ(legalSpelling("skb->len"), "skb_len");
  EXPECT_EQ(legalSpelling("()"), "value");
  EXPECT_EQ(scriptName("/etc/kq/tcp-retransmits.kq"), "tcp_retransmits");
  EXPECT_EQ(scriptName("syscalls.kq"), "syscalls");
}

}  // namespace
}  // namespace kq::serve

namespace kq::serve {
namespace {

/// The (field, bytes) of a protobuf message's length-delimited fields, in order.
std::vector<std::pair<int, std::string>> fields(const std::string& m) {
  std::vector<std::pair<int, std::string>> out;
  size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; i < m.size(); shift += 7) {
      auto b = static_cast<uint8_t>(m[i++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (i < m.size()) {
    uint64_t tag = varint();
    if ((tag & 7) == 2) {
      uint64_t n = varint();
      out.emplace_back(static_cast<int>(tag >> 3), m.substr(i, n));
      i += n;
    } else if ((tag & 7) == 1) {
      out.emplace_back(static_cast<int>(tag >> 3), m.substr(i, 8));
      i += 8;
    } else {
      out.emplace_back(static_cast<int>(tag >> 3), std::to_string(varint()));
    }
  }
  return out;
}

TEST(RemoteWrite, EachSampleIsASeriesWithSortedLabels) {
  Family f{"kq_io_calls", MetricType::Counter, "", {{"_total", {{"comm", "bash"}}, "3"}}};
  std::string request = encodeWriteRequest({f}, 1700000000123, {{"instance", "web-3"}, {"job", "kq"}});
  auto series = fields(request);
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].first, 1);  // WriteRequest.timeseries
  auto parts = fields(series[0].second);
  ASSERT_EQ(parts.size(), 5u);  // four labels, one sample
  std::vector<std::string> labels;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(parts[i].first, 1);
    auto lv = fields(parts[i].second);
    labels.push_back(lv.at(0).second + "=" + lv.at(1).second);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"__name__=kq_io_calls_total", "comm=bash", "instance=web-3", "job=kq"}));
  auto sample = fields(parts[4].second);
  double value;
  std::memcpy(&value, sample.at(0).second.data(), 8);
  EXPECT_EQ(value, 3.0);
  EXPECT_EQ(sample.at(1).second, "1700000000123");
}

TEST(RemoteWrite, UrlsAreHttp) {
  auto t = parseHttpUrl("http://10.0.0.1:9090/api/v1/write");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "10.0.0.1");
  EXPECT_EQ(t->port, "9090");
  EXPECT_EQ(t->path, "/api/v1/write");
  auto v6 = parseHttpUrl("http://[::1]:9090/w");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_FALSE(parseHttpUrl("https://x/api/v1/write"));
}

TEST(ServingProblems, AnObjectIsHeldToTheNamesAScriptIs) {
  // What `kq serve` says of an object's plan (no source to point at): a key and an
  // aggregate without legal names, `every`, and two aggregates of one name.
  plan::PortablePlan p;
  p.plan.layout.queries = 2;
  plan::AggregateLayout a;
  a.keys = {key("str(filename)"), key("comm")};
  a.slots = {slot("count()", AggregateKind::Count), slot("sum(size)", AggregateKind::Sum)};
  plan::AggregateLayout b;
  b.query = 1;
  b.every_ns = 1'000'000'000;
  b.slots = {slot("count()", AggregateKind::Count)};
  p.plan.layout.aggregates = {a, b};
  EXPECT_EQ(servingProblems(p),
            (std::vector<std::string>{
                "query 1: `str(filename)` is not a name Prometheus accepts for a label (build it again with "
                "`select str(filename) as str_filename, ...`)",
                "query 1: `sum(size)` is not a name Prometheus accepts for a metric (build it again with "
                "`sum(size) as sum_size`)",
                "query 2 has `every`: a scrape reads all that was counted since the script started "
                "(build it without `every`; rate() and increase() give per-interval values)",
                "query 2: two aggregates are both named `count` (the other in query 1): give one another name "
                "with `as`"}));
  p.plan.layout.aggregates = {b};
  p.plan.layout.aggregates[0].every_ns = 0;
  EXPECT_TRUE(servingProblems(p).empty());
}

}  // namespace
}  // namespace kq::serve
