#include "record/replay_query.h"

#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/ast/compare.h"
#include "compiler/diag/render.h"
#include "compiler/parse/parse.h"
#include "engine/table.h"
#include "record/bytes.h"
#include "record/recording.h"
#include "record/replay_checker.h"
#include "record/session_codec.h"

namespace kq::record {
namespace {

using namespace replay;

/// A column the query makes: copied from a recorded field, or computed.
struct Column {
  FieldLayout layout;
  Compiled value;
};

/// A computed value as the decoder would have made it for a field of `sort`.
Value valueOf(const Datum& d, Sort sort) {
  Value v;
  switch (sort) {
    case Sort::Number:
      v.kind = ValueKind::Int;
      v.i = d.n;
      v.text = std::to_string(d.n);
      break;
    case Sort::Unsigned:
      v.kind = ValueKind::Uint;
      v.u = static_cast<uint64_t>(d.n);
      v.text = std::to_string(v.u);
      break;
    case Sort::Bool:
      v.kind = ValueKind::Bool;
      v.u = d.n != 0;
      v.text = v.u ? "true" : "false";
      break;
    case Sort::Name:
      v.kind = ValueKind::Name;
      v.i = d.n;
      v.text = d.s;
      break;
    case Sort::Text:
      v.kind = ValueKind::String;
      v.text = d.s;
      break;
  }
  return v;
}

FieldLayout fieldFor(std::string name, Sort sort) {
  FieldLayout f;
  f.name = std::move(name);
  f.size = 8;
  switch (sort) {
    case Sort::Number: f.kind = FieldKind::Signed; break;
    case Sort::Unsigned: f.kind = FieldKind::Unsigned; break;
    case Sort::Bool: f.kind = FieldKind::Bool; break;
    case Sort::Name: f.kind = FieldKind::Signed; break;
    case Sort::Text:
      f.kind = FieldKind::String;
      f.size = 256;
      break;
  }
  return f;
}

/// The column of a recorded field or a computed expression.
Column columnOf(Compiled c, std::string name) {
  Column col;
  if (c.layout) {
    col.layout = *c.layout;
    col.layout.name = std::move(name);
    col.layout.args.clear();  // a format's text is made already
    col.layout.address_field = -1;
    col.layout.is_capture = false;  // a selected column, not a capture beneath the line
  } else {
    col.layout = fieldFor(std::move(name), c.sort);
    if (c.text_bytes) col.layout.size = c.text_bytes;
  }
  col.value = std::move(c);
  return col;
}

/// The value of column `c` for event `e`: the recorded value itself where it is one.
Value columnValue(const Column& c, const DecodedEvent& e) {
  if (c.value.value) return c.value.value(e);
  return valueOf(c.value.eval(e), c.value.sort);
}

/// Receives the recording's calls and hands the query's results to the real sink.
class QuerySink : public engine::Sink {
 public:
  QuerySink(Checker& checker, std::optional<Compiled> where, std::vector<Column> columns, bool select,
            std::vector<Column> keys, std::vector<AggregateCall> aggregates, const plan::AggregateLayout* table,
            uint64_t limit, uint64_t every_ns, int64_t boot_offset_ns, const plan::ProgramLayout& out_layout)
      : checker_(checker), where_(std::move(where)), columns_(std::move(columns)), select_(select),
        keys_(std::move(keys)), aggregates_(std::move(aggregates)), table_(table), limit_(limit),
        every_ns_(every_ns), boot_offset_ns_(boot_offset_ns), out_layout_(out_layout) {}

  void attach(engine::Sink& sink) { sink_ = &sink; }

  void onBegin() override { sink_->onBegin(); }
  void onEvent(const DecodedEvent& e) override {
    if (checker_.reads(e)) queryEvent(e);
    keep(e);
  }

 private:
  /// An event of the query: a row, when each join finds its event and `where` passes.
  void queryEvent(const DecodedEvent& e) {
    std::vector<ReplayJoin>& joins = checker_.joins();
    std::vector<std::string> keys(joins.size());
    for (size_t j = 0; j < joins.size(); ++j) {
      ReplayJoin& join = joins[j];
      keys[j] = keyOf(join, e, /*source=*/false);
      auto it = join.waiting.find(keys[j]);
      if (it == join.waiting.end()) {
        ++join.counts.unmatched;
        return;
      }
      if (join.within_ns && e.header.time_ns - it->second.header.time_ns > join.within_ns) {
        ++join.counts.expired;
        join.waiting.erase(it);
        return;
      }
      checker_.setJoined(j, &it->second);
    }
    bool passes = !where_ || where_->eval(e).truthy();
    if (passes) row(e);
    // A joined event is used up by the row it made (but a `keep` join's); one the `where`
    // turned down waits on.
    for (size_t j = 0; j < joins.size(); ++j) {
      checker_.setJoined(j, nullptr);
      if (passes) {
        ++joins[j].counts.matched;
        if (!joins[j].keep) joins[j].waiting.erase(keys[j]);
      }
    }
  }

  /// An event of a join's source (that passes its `where`) waits under its key.
  void keep(const DecodedEvent& e) {
    std::vector<ReplayJoin>& joins = checker_.joins();
    for (size_t j = 0; j < joins.size(); ++j) {
      ReplayJoin& join = joins[j];
      if (!join.source[e.header.probe_id]) continue;
      if (join.where && !join.where->eval(e).truthy()) continue;
      checker_.setJoined(j, &e);
      std::string key = keyOf(join, e, /*source=*/true);
      checker_.setJoined(j, nullptr);
      auto [it, added] = join.waiting.insert_or_assign(key, e);
      ++join.counts.kept;
      if (!added) ++join.counts.replaced;
    }
  }

  static std::string keyOf(const ReplayJoin& join, const DecodedEvent& e, bool source) {
    ByteWriter key;
    for (const auto& [source_side, query_side] : join.keys) {
      Datum d = (source ? source_side : query_side)(e);
      key.u8(d.has_number);
      key.svarint(d.n);
      key.string(d.has_number ? "" : d.s);
    }
    return key.data();
  }

  void row(const DecodedEvent& e) {
    last_wall_ns_ = e.wall_ns;
    if (table_) return count(e);
    if (limit_ && shown_ >= limit_) return;
    ++shown_;
    if (!select_) {
      forward(e, e.values);
      return;
    }
    std::vector<Value> values;
    values.reserve(columns_.size());
    for (const Column& c : columns_) values.push_back(columnValue(c, e));
    for (size_t f = 0; f < e.probe->fields.size() && f < e.values.size(); ++f) {
      if (e.probe->fields[f].hidden) values.push_back(e.values[f]);  // as replayQuery laid them out
    }
    forward(e, std::move(values));
  }

 public:
  void onTable(const engine::Table&) override {}  // the recorded tables answer the recorded query
  void onQueryEnd(uint32_t, const engine::QueryStats&) override {}
  void onEnd() override { sink_->onEnd(); }
  void onLoss(uint32_t, const engine::QueryStats&) override {}  // the summary says the recording's
  void onSummary(const engine::SessionResult& recorded) override {
    summarized_ = true;
    finish(recorded);
  }
  void onError(const std::string& message) override { sink_->onError(message); }
  void flush() override { sink_->flush(); }
  std::string failure() const override { return sink_->failure(); }
  bool readerGone() const override { return sink_->readerGone(); }
  bool failed() const override { return sink_->failed(); }

  /// The end, when the recording was cut short before its summary.
  void finishCutShort() {
    if (!summarized_) finish(engine::SessionResult{});
  }

 private:
  void forward(const DecodedEvent& e, std::vector<Value> values) {
    out_ = e;
    out_.probe = &out_layout_.probes[e.header.probe_id];
    out_.values = std::move(values);
    sink_->onEvent(out_);
  }

  void count(const DecodedEvent& e) {
    if (every_ns_) {
      uint64_t interval = e.header.time_ns / every_ns_;
      if (interval_ && interval != *interval_) showTable();
      interval_ = interval;
    }
    std::vector<Value> keys;
    keys.reserve(keys_.size());
    ByteWriter encoded;
    for (const Column& k : keys_) {
      keys.push_back(columnValue(k, e));
      // Grouped as it prints, as the kernel's stacks are (engine/table.cpp).
      Value printed = keys.back();
      printed.addresses.clear();
      encodeValue(encoded, printed);
    }
    auto [it, added] = groups_index_.emplace(encoded.data(), groups_.size());
    if (added) groups_.push_back({std::move(keys), std::vector<uint8_t>(table_->value_size, 0)});
    uint8_t* value = groups_[it->second].value.data();
    for (size_t s = 0; s < aggregates_.size(); ++s) {
      const AggregateCall& a = aggregates_[s];
      engine::countInto(table_->slots[s], value, a.argument ? a.argument->eval(e).n : 0);
    }
  }

  void showTable() {
    int64_t wall = every_ns_ && interval_ ? static_cast<int64_t>((*interval_ + 1) * every_ns_) + boot_offset_ns_
                                          : last_wall_ns_;
    engine::Table table = engine::tableOfGroups(*table_, groups_, wall, limit_);
    sink_->onTable(table);
    groups_.clear();
    groups_index_.clear();
  }

  void finish(const engine::SessionResult& recorded) {
    if (table_ && (!groups_.empty() || !every_ns_)) showTable();
    engine::SessionResult result;
    result.events = table_ ? 0 : shown_;
    result.lost = recorded.lost;
    engine::QueryStats stats;
    stats.events = stats.printed = result.events;
    stats.lost = recorded.lost;
    stats.ended = true;
    result.queries.push_back(stats);
    for (ReplayJoin& join : checker_.joins()) {
      engine::JoinResult r = join.counts;
      r.name = join.name;
      r.waiting = join.waiting.size();
      result.joins.push_back(r);
    }
    result.output_failure = sink_->failure();
    result.reader_gone = sink_->readerGone();
    sink_->onSummary(result);
  }

  Checker& checker_;
  std::optional<Compiled> where_;
  std::vector<Column> columns_;
  bool select_;
  std::vector<Column> keys_;
  std::vector<AggregateCall> aggregates_;
  const plan::AggregateLayout* table_;
  uint64_t limit_;
  uint64_t every_ns_;
  int64_t boot_offset_ns_;
  const plan::ProgramLayout& out_layout_;
  engine::Sink* sink_ = nullptr;
  DecodedEvent out_;
  uint64_t shown_ = 0;
  int64_t last_wall_ns_ = 0;
  bool summarized_ = false;
  std::optional<uint64_t> interval_;
  std::vector<engine::CountedGroup> groups_;
  std::unordered_map<std::string, size_t> groups_index_;
};

}  // namespace

std::vector<std::string> replayFieldNames(const plan::ProbeLayout& p) {
  std::vector<std::string> names(std::begin(kEventNames), std::end(kEventNames));
  for (const FieldLayout& f : p.fields) {
    if (!f.hidden && std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
  }
  return names;
}

int replayQuery(Recording& recording, const std::string& name, const std::string& query, engine::OutputFormat format,
                const engine::TextOptions& text, engine::PrintContext& context, std::ostream& out,
                std::ostream& err, const std::string& color) {
  SourceManager sources;
  FileId file = sources.add(name, query);
  Diagnostics diags;
  RenderOptions render;
  render.color = color == "always";
  auto fail = [&] {
    renderDiagnostics(diags, sources, err, render);
    return 1;
  };
  std::optional<ast::Query> q = parse::parseReplayQuery(sources, file, diags);
  if (!q) return fail();
  const ast::Clauses& clauses = q->clauses;
  const plan::ProgramPlan& recorded = recording.plan().plan;
  Checker checker(sources, file, diags, recorded.layout);
  if (!checker.chooseProbes(*q)) return fail();
  if (!checker.checkJoins(clauses.joins)) return fail();
  if (clauses.track) {
    diags.report(DiagKind::Unsupported, *clauses.track, "`track` follows packets as the kernel sees them: record with it");
  }
  if (clauses.for_duration) {
    diags.report(DiagKind::Unsupported, clauses.for_duration->range, "a replay reads the whole recording: `for` has no time to run for")
        .note("filter on `time` instead");
  }
  std::optional<Compiled> where;
  if (clauses.where) where = checker.compile(*clauses.where);

  bool aggregated = false;
  for (const ast::SelectItem& item : clauses.select) {
    aggregated = aggregated || (item.expr->kind == ast::ExprKind::Call &&
                                Checker::aggregateKind(ast::as<ast::Call>(*item.expr).callee));
  }
  aggregated = aggregated || !clauses.group_by.empty();
  if (clauses.every && !aggregated) {
    diags.report(DiagKind::AggregateMisuse, clauses.every->range, "`every` prints a table each interval: select an aggregate");
  }

  // The plan the output is printed with: the recorded one, its probes' fields the query's.
  plan::ProgramPlan shown = recorded;
  shown.layout.aggregates.clear();
  shown.layout.queries = 1;
  shown.layout.query_names = {""};
  for (size_t i = 0; i < shown.layout.probes.size(); ++i) {
    shown.layout.probes[i].query = 0;
    // Only the probes the query reads print: the columns are theirs alone.
    if (!checker.probesRead()[i]) shown.layout.probes[i].writes_records = false;
  }
  std::vector<Column> columns, keys;
  std::vector<AggregateCall> aggregates;
  plan::AggregateLayout table;
  if (!aggregated) {
    for (const ast::SelectItem& item : clauses.select) {
      std::optional<Compiled> c = checker.compile(*item.expr);
      if (c) columns.push_back(columnOf(std::move(*c), item.alias.value_or(checker.source(item.expr->range))));
    }
    if (!clauses.select.empty()) {
      for (size_t i = 0; i < shown.layout.probes.size(); ++i) {
        if (!checker.probesRead()[i]) continue;
        plan::ProbeLayout& p = shown.layout.probes[i];
        p.fields.clear();
        for (const Column& c : columns) p.fields.push_back(c.layout);
        // What no column shows but a sink reads (a packet's bytes, for pcap-ng) follows them,
        // as QuerySink::row passes it on.
        for (const plan::FieldLayout& f : recorded.layout.probes[i].fields) {
          if (f.hidden) p.fields.push_back(f);
        }
        p.name_field = -1;  // each event keeps its own name
        if (p.packet) {
          // A packet's facts (its skb, where it was seen) were decoded from the recorded
          // fields: the sinks print them from the event, with the sites' names kept here.
          p.packet->skb_field = p.packet->site_field = p.packet->return_field = -1;
          p.packet->reason_field = p.packet->journey_field = p.packet->verdict_field = -1;
        }
      }
    }
  } else {
    std::vector<bool> selected(clauses.group_by.size(), false);
    std::vector<std::string> key_names;
    for (const ast::ExprPtr& k : clauses.group_by) key_names.push_back(checker.source(k->range));
    std::vector<std::pair<bool, uint32_t>> chosen;  // (key, index), select order
    for (const ast::SelectItem& item : clauses.select) {
      std::string name = item.alias.value_or(checker.source(item.expr->range));
      if (item.expr->kind == ast::ExprKind::Call && Checker::aggregateKind(ast::as<ast::Call>(*item.expr).callee)) {
        if (std::optional<AggregateCall> a = checker.aggregate(ast::as<ast::Call>(*item.expr), name)) {
          chosen.emplace_back(false, static_cast<uint32_t>(aggregates.size()));
          aggregates.push_back(std::move(*a));
        }
        continue;
      }
      int32_t key = -1;
      for (size_t k = 0; k < clauses.group_by.size() && key < 0; ++k) {
        if (ast::sameExpr(*clauses.group_by[k], *item.expr)) key = static_cast<int32_t>(k);
      }
      if (key < 0) {
        std::string t = checker.source(item.expr->range);
        diags.report(DiagKind::AggregateMisuse, item.expr->range, fmt::format("`{}` is neither an aggregate nor a `group by` key", t))
            .note(clauses.group_by.empty() ? fmt::format("add `group by {}`", t) : "add it to `group by`");
        continue;
      }
      selected[key] = true;
      if (item.alias) key_names[key] = *item.alias;
      chosen.emplace_back(true, static_cast<uint32_t>(key));
    }
    for (size_t k = 0; k < clauses.group_by.size(); ++k) {
      std::optional<Compiled> c = checker.compile(*clauses.group_by[k]);
      if (!c) continue;
      Column col = columnOf(std::move(*c), key_names[k]);
      if (col.layout.kind == FieldKind::Record) col.layout.kind = FieldKind::Pointer, col.layout.size = 8;
      keys.push_back(std::move(col));
    }
    if (diags.hasErrors()) return fail();
    for (const Column& k : keys) table.keys.push_back(k.layout);
    // Every key prints (unselected ones first), then `select` order: as a live table.
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!selected[k]) table.columns.emplace_back(true, static_cast<uint32_t>(k));
    }
    table.columns.insert(table.columns.end(), chosen.begin(), chosen.end());
    uint32_t offset = 0;
    for (AggregateCall& a : aggregates) {
      a.slot.offset = offset;
      offset += static_cast<uint32_t>(plan::slotBytes(a.slot));
      table.slots.push_back(a.slot);
    }
    table.value_size = std::max<uint32_t>(offset, 8);
    table.every_ns = clauses.every ? clauses.every->value : 0;
    table.map = "replay";
    shown.layout.aggregates.push_back(table);
    // Its events are counted, not printed: the output is its table, as a live one's is.
    for (plan::ProbeLayout& p : shown.layout.probes) p.writes_records = false;
  }
  if (diags.hasErrors()) return fail();

  uint64_t limit = clauses.limit ? clauses.limit->value : 0;
  const plan::AggregateLayout* table_layout = aggregated ? &shown.layout.aggregates.front() : nullptr;
  QuerySink query_sink(checker, std::move(where), std::move(columns), !clauses.select.empty() && !aggregated,
                       std::move(keys), std::move(aggregates), table_layout, limit,
                       table_layout ? table_layout->every_ns : 0, context.boot_offset_ns, shown.layout);
  std::unique_ptr<engine::Sink> sink = engine::makeSink(format, shown, context, out, err, text);
  query_sink.attach(*sink);
  bool read_all = recording.play(query_sink);
  if (!read_all) query_sink.finishCutShort();
  out.flush();
  if (!read_all) {
    err << "kq replay: error: " << recording.error() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kq::record
