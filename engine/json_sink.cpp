#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/decoder.h"
#include "engine/sinks.h"
#include "runtime/fd_output.h"
#include "runtime/printed.h"
#include "runtime/type_dump.h"

namespace kq::engine {
namespace {

using Json = nlohmann::ordered_json;
using plan::FieldKind;
using plan::FieldLayout;
using plan::ProbeLayout;

class JsonSink : public Sink {
 public:
  JsonSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out, std::ostream& err,
           JsonOptions options)
      : layout_(plan.layout), context_(context), out_(out), err_(err), options_(std::move(options)) {}

  void onEvent(const DecodedEvent& e) override {
    const ProbeLayout& probe = *e.probe;
    Json j;
    for (const auto& [name, value] : options_.event_fields) j[name] = value;
    if (e.packet) {
      // ipftrace2's fields (its timestamp is bpf_ktime_get_ns(), as here), then the query's.
      const plan::PacketLayout& packet = *probe.packet;
      uint64_t site = e.packet->site;
      j["packet_id"] = fmt::format("0x{:x}", e.packet->skb);
      j["timestamp"] = e.header.time_ns;
      j["processor_id"] = e.header.cpu;
      j["module"] = site < packet.modules.size() ? packet.modules[site] : "";
      j["function"] = site < packet.sites.size() ? packet.sites[site] : std::to_string(site);
      j["is_return"] = e.packet->is_return;
      if (!e.packet->reason.empty()) j["drop_reason"] = e.packet->reason;
      if (!e.packet->verdict.empty()) j["verdict"] = e.packet->verdict;
      // kq's own: the journey the skb is on (a clone shares its original's).
      if (e.packet->journey) j["journey"] = fmt::format("0x{:x}", e.packet->journey);
    } else {
      j["time"] = options_.rfc3339 ? runtime::rfc3339Text(e.wall_ns) : clockText(e.wall_ns, ClockPrecision::Microseconds);
      j["time_ns"] = e.wall_ns;
      j["cpu"] = e.header.cpu;
      j["pid"] = e.header.pid;
      j["tid"] = e.header.tid;
      j["comm"] = runtime::stringBytes(e.comm);
      j["probe"] = e.probe_name;
    }
    if (layout_.queries > 1 || options_.always_query) nameQuery(j, probe.query);
    for (size_t i = 0; i < probe.fields.size(); ++i) {
      if (e.values[i].kind == ValueKind::Missing || probe.fields[i].hidden) continue;
      put(j, probe.fields[i].name, value(probe.fields[i], e.values[i]));
    }
    out_ << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  }

  void onTable(const Table& table) override {
    const plan::AggregateLayout& layout = *table.layout;
    if (table.events) counted_ += *table.events;
    else uncounted_tables_ = true;
    Json t;
    t["time_ns"] = table.wall_ns;
    nameQuery(t, layout.query);
    Json list = Json::array();
    // Each column its own key: a name given twice (`count() as n, sum(x) as n`, or a
    // key's) is written `n_2` the second time, as an event's field is.
    std::vector<std::string> names;
    for (const auto& [is_key, i] : layout.columns) {
      std::string name = is_key ? layout.keys[i].name : layout.slots[i].name;
      std::string unique = name;
      for (int n = 2; std::find(names.begin(), names.end(), unique) != names.end(); ++n) {
        unique = fmt::format("{}_{}", name, n);
      }
      names.push_back(std::move(unique));
    }
    for (const TableRow& row : table.rows) {
      Json j;
      size_t column = 0;
      for (const auto& [is_key, i] : layout.columns) {
        const std::string& name = names[column++];
        if (is_key) {
          const FieldLayout& k = layout.keys[i];
          const Value& v = row.keys[i];
          if (k.kind == FieldKind::Signed || k.kind == FieldKind::SyscallReturn) j[name] = v.i;
          else if (k.kind == FieldKind::Unsigned) j[name] = v.u;
          else if (k.kind == FieldKind::Bool) j[name] = v.u != 0;
          else if (k.kind == FieldKind::Table && v.kind != ValueKind::Name) j[name] = v.i;
          else if (k.kind == FieldKind::String) j[name] = runtime::stringBytes(v.text);
          else j[name] = v.text;
          continue;
        }
        const plan::AggregateSlot& s = layout.slots[i];
        const AggregateValue& v = row.slots[i];
        if (!isHistogram(s)) {
          j[name] = !v.scalar ? Json(nullptr)
                    : v.is_unsigned ? Json(static_cast<uint64_t>(*v.scalar))
                                    : Json(*v.scalar);
          continue;
        }
        Json buckets = Json::array();
        for (uint32_t b = 0; b < v.buckets.size(); ++b) {
          int64_t n = static_cast<int64_t>(v.buckets[b]);
          if (!n) continue;
          Json bucket;
          auto bounds = [&bucket](auto bounds) {
            bucket["lo"] = bounds.first ? Json(*bounds.first) : Json(nullptr);
            bucket["hi"] = bounds.second ? Json(*bounds.second) : Json(nullptr);
          };
          // A power-of-two histogram's bounds go up to 2^64: unsigned.
          if (s.kind == plan::AggregateKind::Hist) bounds(powerOfTwoBounds(b));
          else bounds(bucketBounds(s, b));
          bucket["count"] = n;
          buckets.push_back(bucket);
        }
        j[name] = buckets;
      }
      list.push_back(j);
    }
    t["rows"] = list;
    if (hasTop(layout) || table.left_out) t["more"] = table.left_out;
    if (table.cut_keys) t["cut_keys"] = table.cut_keys;
    out_ << t.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    out_.flush();
  }

  void onError(const std::string& message) override { err_ << "kq: error: " << message << "\n"; }

  void onSummary(const SessionResult& result) override {
    if (result.reader_gone) return;  // `| head` took what it wanted
    sayEnding(result, err_);
    nlohmann::json summary = {
        {"events", result.events},
        {"lost", result.lostFor(plan::Lost::RingBufferFull)},
        {"not_counted", result.lostFor(plan::Lost::TableFull)},
        {"not_counted_no_memory", result.lostFor(plan::Lost::TableNoMemory)},
        {"entries_not_kept", result.lostFor(plan::Lost::StashFull)},
        {"exits_without_entry", result.lostFor(plan::Lost::StashMissing)},
    };
    if (result.not_shown) summary["not_shown"] = result.not_shown;
    // What the tables counted (`events` is what was printed), as the text's summary says.
    if (!layout_.aggregates.empty() && !uncounted_tables_) summary["counted"] = counted_;
    // A packet query's losses, by site (all queries').
    nlohmann::json lost_at = nlohmann::json::object();
    for (const QueryStats& s : result.queries) {
      for (const auto& [site, n] : s.lost_at) lost_at[site] = lost_at.value(site, uint64_t{0}) + n;
    }
    if (!lost_at.empty()) summary["lost_at"] = lost_at;
    if (layout_.queries > 1) {
      nlohmann::json queries = nlohmann::json::array();
      for (size_t q = 0; q < result.queries.size(); ++q) {
        const QueryStats& s = result.queries[q];
        nlohmann::json counts = {{"query", q + 1},
                           {"events", s.events},
                           {"lost", s.lostFor(plan::Lost::RingBufferFull)},
                           {"not_counted", s.lostFor(plan::Lost::TableFull)},
                           {"not_counted_no_memory", s.lostFor(plan::Lost::TableNoMemory)},
                           {"entries_not_kept", s.lostFor(plan::Lost::StashFull)},
                           {"exits_without_entry", s.lostFor(plan::Lost::StashMissing)}};
        // Read from the ring after the session's end, not printed: as the whole's `not_shown`.
        if (s.not_shown) counts["not_shown"] = s.not_shown;
        nameQuery(counts, static_cast<uint32_t>(q));
        queries.push_back(std::move(counts));
      }
      summary["queries"] = queries;
    }
    if (!result.joins.empty()) {
      nlohmann::json joins = nlohmann::json::array();
      for (const JoinResult& join : result.joins) {
        nlohmann::json counts = {{"name", join.name}, {"query", join.query + 1}, {"kept", join.kept},
                                 {"replaced", join.replaced}, {"matched", join.matched},
                                 {"unmatched", join.unmatched}, {"expired", join.expired},
                                 {"evicted", join.evicted}, {"waiting", join.waiting}};
        nameQuery(counts, join.query);
        joins.push_back(std::move(counts));
      }
      summary["joins"] = joins;
    }
    err_ << nlohmann::json{{"summary", summary}}.dump() << "\n";
  }

  void flush() override { out_.flush(); }
  bool failed() const override { return out_.bad(); }
  std::string failure() const override { return runtime::outputFailure(out_); }
  bool readerGone() const override { return runtime::readerGone(out_); }

 private:
  /// `"query": 2`, and `"query_name": "opens"` when the query has a name (`trace ... as opens`).
  template <class J> void nameQuery(J& j, uint32_t query) const {
    j["query"] = query + 1;
    if (query < layout_.query_names.size() && !layout_.query_names[query].empty()) {
      j["query_name"] = layout_.query_names[query];
    }
  }

  /// One field as JSON: numbers, strings, structs as objects, stacks as arrays.
  Json value(const FieldLayout& f, const Value& v) const {
    switch (f.kind) {
      case FieldKind::Signed:
      case FieldKind::SyscallReturn: return v.i;  // a number for machines; text says the errno
      case FieldKind::Unsigned: return v.u;
      case FieldKind::Bool: return v.u != 0;
      case FieldKind::Table: return v.kind == ValueKind::Name ? Json(v.text) : Json(v.i);
      case FieldKind::Record: {
        Json dump = context_.types.recordJson(f, v.bytes.data());
        if (dump.is_object() && f.address_field >= 0) {
          Json with_address;
          with_address["address"] = fmt::format("0x{:x}", v.u);
          with_address.update(dump);
          dump = with_address;
        }
        return dump;
      }
      case FieldKind::KernelStack:
      case FieldKind::UserStack: {
        Json frames = Json::array();
        for (const std::string& frame : v.frames) frames.push_back(frame);
        return frames;
      }
      case FieldKind::String:
        return runtime::stringBytes(v.text);  // the string, in JSON's escapes rather than kq's
      default:
        return v.text;
    }
  }

  /// Keys are unique: a field named like the header (`select time`) or like an earlier field
  /// is written as `time_2`, unless its value is the same (`select comm`).
  static void put(Json& j, const std::string& name, Json value) {
    std::string key = name;
    for (int n = 2; j.contains(key); ++n) {
      if (j[key] == value) return;
      key = fmt::format("{}_{}", name, n);
    }
    j[key] = std::move(value);
  }

  const plan::ProgramLayout& layout_;
  PrintContext& context_;
  std::ostream& out_;
  std::ostream& err_;
  JsonOptions options_;
  uint64_t counted_ = 0;           // events the tables shown counted
  bool uncounted_tables_ = false;  // a table of sums, mins or maxes only: its events unknown
};

}  // namespace

std::unique_ptr<Sink> makeJsonSink(const plan::ProgramPlan& plan, PrintContext& context,
                                   std::ostream& out, std::ostream& err, JsonOptions options) {
  return std::make_unique<JsonSink>(plan, context, out, err, std::move(options));
}

}  // namespace kq::engine
