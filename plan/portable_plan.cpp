#include "plan/portable_plan.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kq::plan {

using Json = nlohmann::ordered_json;

// One to_json/from_json pair per type, found by nlohmann's argument-dependent lookup. Enums
// are their numbers: kPlanFormat changes when one does.

void to_json(Json& j, const FieldLayout& f) {
  j = Json{{"name", f.name}, {"kind", f.kind}, {"offset", f.offset}, {"size", f.size},
           {"btf_id", f.btf_id}, {"type_name", f.type_name}, {"is_capture", f.is_capture},
           {"address_field", f.address_field}, {"hidden", f.hidden},
           {"int_bytes", f.int_bytes}, {"format", f.format}, {"args", f.args}, {"path", f.path},
           {"separator", f.separator}, {"names", f.names}};
}
void from_json(const Json& j, FieldLayout& f) {
  j.at("name").get_to(f.name);
  j.at("kind").get_to(f.kind);
  j.at("offset").get_to(f.offset);
  j.at("size").get_to(f.size);
  j.at("btf_id").get_to(f.btf_id);
  j.at("type_name").get_to(f.type_name);
  j.at("is_capture").get_to(f.is_capture);
  j.at("address_field").get_to(f.address_field);
  j.at("hidden").get_to(f.hidden);
  j.at("int_bytes").get_to(f.int_bytes);
  j.at("format").get_to(f.format);
  j.at("args").get_to(f.args);
  j.at("path").get_to(f.path);
  j.at("separator").get_to(f.separator);
  j.at("names").get_to(f.names);
}

void to_json(Json& j, const PacketLayout& p) {
  j = Json{{"skb_field", p.skb_field}, {"site_field", p.site_field},
           {"return_field", p.return_field}, {"reason_field", p.reason_field},
           {"sites", p.sites}, {"modules", p.modules}, {"frees", p.frees}, {"graph", p.graph}};
}
void from_json(const Json& j, PacketLayout& p) {
  j.at("skb_field").get_to(p.skb_field);
  j.at("site_field").get_to(p.site_field);
  j.at("return_field").get_to(p.return_field);
  j.at("reason_field").get_to(p.reason_field);
  j.at("sites").get_to(p.sites);
  j.at("modules").get_to(p.modules);
  j.at("frees").get_to(p.frees);
  j.at("graph").get_to(p.graph);
}

void to_json(Json& j, const ProbeLayout& p) {
  j = Json{{"name", p.name}, {"query", p.query}, {"size", p.size}, {"fields", p.fields},
           {"writes_records", p.writes_records}};
  if (p.packet) j["packet"] = *p.packet;
}
void from_json(const Json& j, ProbeLayout& p) {
  j.at("name").get_to(p.name);
  j.at("query").get_to(p.query);
  j.at("size").get_to(p.size);
  j.at("fields").get_to(p.fields);
  j.at("writes_records").get_to(p.writes_records);
  if (j.contains("packet")) p.packet = j.at("packet").get<PacketLayout>();
}

void to_json(Json& j, const AggregateSlot& s) {
  j = Json{{"name", s.name}, {"kind", s.kind}, {"offset", s.offset}, {"lo", s.lo},
           {"hi", s.hi}, {"step", s.step}, {"buckets", s.buckets}, {"limit", s.limit},
           {"is_signed", s.is_signed}};
}
void from_json(const Json& j, AggregateSlot& s) {
  j.at("name").get_to(s.name);
  j.at("kind").get_to(s.kind);
  j.at("offset").get_to(s.offset);
  j.at("lo").get_to(s.lo);
  j.at("hi").get_to(s.hi);
  j.at("step").get_to(s.step);
  j.at("buckets").get_to(s.buckets);
  j.at("limit").get_to(s.limit);
  j.at("is_signed").get_to(s.is_signed);
}

void to_json(Json& j, const AggregateLayout& a) {
  j = Json{{"query", a.query}, {"map", a.map}, {"key_size", a.key_size},
           {"value_size", a.value_size}, {"keys", a.keys}, {"slots", a.slots},
           {"columns", a.columns}, {"every_ns", a.every_ns},
           {"interval_bytes", a.interval_bytes}, {"per_cpu", a.per_cpu}};
}
void from_json(const Json& j, AggregateLayout& a) {
  j.at("query").get_to(a.query);
  j.at("map").get_to(a.map);
  j.at("key_size").get_to(a.key_size);
  j.at("value_size").get_to(a.value_size);
  j.at("keys").get_to(a.keys);
  j.at("slots").get_to(a.slots);
  j.at("columns").get_to(a.columns);
  j.at("every_ns").get_to(a.every_ns);
  j.at("interval_bytes").get_to(a.interval_bytes);
  j.at("per_cpu").get_to(a.per_cpu);
}

void to_json(Json& j, const PlannedProgram& p) {
  j = Json{{"function", p.function}, {"attach", p.attach}, {"target", p.target},
           {"binary", p.binary}, {"symbols", p.symbols}, {"cookies", p.cookies}, {"period_ns", p.period_ns},
           {"frequency_hz", p.frequency_hz}, {"group", p.group}, {"method", p.method},
           {"query", p.query}, {"whole_session", p.whole_session}, {"stack_bytes", p.stack_bytes},
           {"helpers", p.helpers}};
}
void from_json(const Json& j, PlannedProgram& p) {
  j.at("function").get_to(p.function);
  j.at("attach").get_to(p.attach);
  j.at("target").get_to(p.target);
  j.at("binary").get_to(p.binary);
  j.at("symbols").get_to(p.symbols);
  if (j.contains("cookies")) j.at("cookies").get_to(p.cookies);
  j.at("period_ns").get_to(p.period_ns);
  j.at("frequency_hz").get_to(p.frequency_hz);
  j.at("group").get_to(p.group);
  j.at("method").get_to(p.method);
  if (j.contains("whole_session")) j.at("whole_session").get_to(p.whole_session);
  j.at("query").get_to(p.query);
  j.at("stack_bytes").get_to(p.stack_bytes);
  j.at("helpers").get_to(p.helpers);
}

void to_json(Json& j, const PlannedMap& m) {
  j = Json{{"name", m.name}, {"type", m.type}, {"key_size", m.key_size},
           {"value_size", m.value_size}, {"max_entries", m.max_entries},
           {"preallocated", m.preallocated}, {"bytes", m.bytes},
           {"bytes_per_cpu", m.bytes_per_cpu}};
}
void from_json(const Json& j, PlannedMap& m) {
  j.at("name").get_to(m.name);
  j.at("type").get_to(m.type);
  j.at("key_size").get_to(m.key_size);
  j.at("value_size").get_to(m.value_size);
  j.at("max_entries").get_to(m.max_entries);
  j.at("preallocated").get_to(m.preallocated);
  j.at("bytes").get_to(m.bytes);
  j.at("bytes_per_cpu").get_to(m.bytes_per_cpu);
}

void to_json(Json& j, const PlannedJoin& p) {
  j = Json{{"name", p.name}, {"query", p.query}, {"map", p.map}, {"counters", p.counters}};
}
void from_json(const Json& j, PlannedJoin& p) {
  j.at("name").get_to(p.name);
  j.at("query").get_to(p.query);
  j.at("map").get_to(p.map);
  j.at("counters").get_to(p.counters);
}

void to_json(Json& j, const QueryLimits& q) { j = Json{{"for_ns", q.for_ns}, {"limit", q.limit}}; }
void from_json(const Json& j, QueryLimits& q) {
  j.at("for_ns").get_to(q.for_ns);
  j.at("limit").get_to(q.limit);
}

void to_json(Json& j, const RecordField& f) {
  j = Json{{"name", f.name}, {"offset", f.offset}, {"size", f.size}};
}
void from_json(const Json& j, RecordField& f) {
  j.at("name").get_to(f.name);
  j.at("offset").get_to(f.offset);
  j.at("size").get_to(f.size);
}

void to_json(Json& j, const TracepointRecord& t) {
  j = Json{{"event", t.event}, {"fields", t.fields}};
}
void from_json(const Json& j, TracepointRecord& t) {
  j.at("event").get_to(t.event);
  j.at("fields").get_to(t.fields);
}

namespace {

/// Why `fields` cannot be read from records of `bytes` bytes, or empty. A plan is trusted
/// no further than this: the formatter reads what its fields say.
std::string fieldsProblem(const std::vector<FieldLayout>& fields, uint64_t bytes) {
  for (const FieldLayout& f : fields) {
    if (f.kind > FieldKind::IpAddress) return fmt::format("field `{}` has an unknown kind", f.name);
    if (uint64_t{f.offset} + f.size > bytes) {
      return fmt::format("field `{}` lies outside its {}-byte record", f.name, bytes);
    }
    if (f.address_field >= static_cast<int64_t>(fields.size())) {
      return fmt::format("field `{}` names a field that does not exist", f.name);
    }
    for (int32_t arg : f.args) {
      if (arg < 0 || arg >= static_cast<int64_t>(fields.size())) {
        return fmt::format("field `{}` names a field that does not exist", f.name);
      }
    }
  }
  return "";
}

/// Bytes an aggregate slot takes in its map value.
uint64_t slotBytes(const AggregateSlot& s) {
  switch (s.kind) {
    case AggregateKind::Count:
    case AggregateKind::Sum:
    case AggregateKind::Top: return 8;
    case AggregateKind::Avg:
    case AggregateKind::Min:
    case AggregateKind::Max: return 16;
    case AggregateKind::Hist: return 65 * 8;
    case AggregateKind::Lhist: return uint64_t{s.buckets} * 8;
  }
  return UINT64_MAX;
}

std::string layoutProblem(const ProgramLayout& layout) {
  for (const ProbeLayout& p : layout.probes) {
    if (p.size < sizeof(EventHeader)) return fmt::format("probe `{}` has no room for its header", p.name);
    if (std::string problem = fieldsProblem(p.fields, p.size); !problem.empty()) return problem;
  }
  for (const AggregateLayout& a : layout.aggregates) {
    if (std::string problem = fieldsProblem(a.keys, a.key_size); !problem.empty()) return problem;
    for (const AggregateSlot& s : a.slots) {
      if (s.kind > AggregateKind::Top || s.offset + slotBytes(s) > a.value_size) {
        return fmt::format("aggregate `{}` lies outside its {}-byte value", s.name, a.value_size);
      }
    }
    for (const auto& [is_key, index] : a.columns) {
      if (index >= (is_key ? a.keys.size() : a.slots.size())) return "a column names nothing";
    }
  }
  return "";
}

}  // namespace

std::string encodePlan(const PortablePlan& p) {
  const ProgramPlan& plan = p.plan;
  Json j{{"format", kPlanFormat},
         {"kq_version", p.kq_version},
         {"built_against", p.built_against},
         {"machine", p.machine},
         {"queries", p.queries},
         {"tracepoints", p.tracepoints},
         {"programs", plan.programs},
         {"maps", plan.maps},
         {"probes", plan.layout.probes},
         {"aggregates", plan.layout.aggregates},
         {"query_count", plan.layout.queries},
         {"events_map", plan.events_map},
         {"lost_map", plan.lost_map},
         {"tracked_map", plan.tracked_map},
         {"joins", plan.joins},
         {"join_counts_map", plan.join_counts_map},
         {"group_names", plan.group_names}, {"packet_groups", plan.packet_groups}};
  return j.dump(1);
}

std::optional<PortablePlan> decodePlan(const std::string& text, std::string* error) {
  PortablePlan p;
  ProgramPlan& plan = p.plan;
  try {
    Json j = Json::parse(text);
    int format = j.at("format").get<int>();
    if (format != kPlanFormat) {
      *error = fmt::format("its plan is in format {} (written by kq {}); this kq reads format {}: "
                           "build it again with this kq",
                           format, j.value("kq_version", std::string("?")), kPlanFormat);
      return std::nullopt;
    }
    j.at("kq_version").get_to(p.kq_version);
    j.at("built_against").get_to(p.built_against);
    j.at("machine").get_to(p.machine);
    j.at("queries").get_to(p.queries);
    j.at("tracepoints").get_to(p.tracepoints);
    j.at("programs").get_to(plan.programs);
    j.at("maps").get_to(plan.maps);
    j.at("probes").get_to(plan.layout.probes);
    j.at("aggregates").get_to(plan.layout.aggregates);
    j.at("query_count").get_to(plan.layout.queries);
    j.at("events_map").get_to(plan.events_map);
    j.at("lost_map").get_to(plan.lost_map);
    j.at("tracked_map").get_to(plan.tracked_map);
    j.at("joins").get_to(plan.joins);
    j.at("join_counts_map").get_to(plan.join_counts_map);
    j.at("group_names").get_to(plan.group_names);
    if (j.contains("packet_groups")) j.at("packet_groups").get_to(plan.packet_groups);
  } catch (const nlohmann::json::exception& e) {
    *error = fmt::format("its plan is malformed: {}", e.what());
    return std::nullopt;
  }
  std::string problem = layoutProblem(plan.layout);
  for (const PlannedProgram& program : plan.programs) {
    if (program.attach > Attach::PerfEvent) problem = "a program has an unknown attach kind";
    if (program.group >= plan.group_names.size()) problem = "a program's group has no name";
  }
  if (p.queries.size() != plan.layout.queries) problem = "its queries' limits do not match its queries";
  if (!problem.empty()) {
    *error = "its plan is inconsistent: " + problem;
    return std::nullopt;
  }
  return p;
}

}  // namespace kq::plan
