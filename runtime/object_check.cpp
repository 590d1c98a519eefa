#include "runtime/object_check.h"
#include "host/btf_file.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "host/btf_validate.h"
#include "plan/plan_check.h"
#include "runtime/libbpf_log.h"
#include "runtime/object_file.h"

namespace kq::runtime {
namespace {

using plan::shownName;

/// A map type as a person says it, with its article: `a per-CPU hash`, `an array`.
std::string typeText(uint32_t type) {
  switch (type) {
    case BPF_MAP_TYPE_HASH: return "a hash";
    case BPF_MAP_TYPE_ARRAY: return "an array";
    case BPF_MAP_TYPE_PERCPU_HASH: return "a per-CPU hash";
    case BPF_MAP_TYPE_PERCPU_ARRAY: return "a per-CPU array";
    case BPF_MAP_TYPE_LRU_HASH: return "an LRU hash";
    case BPF_MAP_TYPE_LRU_PERCPU_HASH: return "a per-CPU LRU hash";
    case BPF_MAP_TYPE_RINGBUF: return "a ring buffer";
  }
  const char* name = libbpf_bpf_map_type_str(static_cast<bpf_map_type>(type));
  return name ? fmt::format("a map of type `{}`", name) : fmt::format("a map of type {}", type);
}

bool isPerCpu(uint32_t type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_ARRAY ||
         type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}
bool isArray(uint32_t type) { return type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY; }
bool isHash(uint32_t type) {
  return type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_PERCPU_HASH ||
         type == BPF_MAP_TYPE_LRU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

/// Compares a plan with an object, keeping the first mismatch.
class Comparison {
 public:
  explicit Comparison(const ObjectContents& contents) : contents_(contents) {}

  void fail(const std::string& message) {
    if (problem_.empty()) problem_ = message;
  }
  const std::string& problem() const { return problem_; }

  /// The map `name` that the plan's field `path` names, or null once said to be missing.
  const ObjectMap* map(const std::string& path, const std::string& name) {
    for (const ObjectMap& m : contents_.maps) {
      if (m.name == name) return &m;
    }
    fail(fmt::format("{} is `{}`, which is not a map of the object", path, shownName(name)));
    return nullptr;
  }

  /// The map `name` (where the plan names one) is an array of one word of `bytes`.
  void oneWord(const std::string& path, const std::string& name, uint32_t bytes) {
    if (name.empty()) return;
    const ObjectMap* m = map(path, name);
    if (m && (m->type != BPF_MAP_TYPE_ARRAY || m->key_size != 4 || m->value_size != bytes || m->max_entries < 1)) {
      fail(fmt::format("{} names map `{}`, which is not an array of one {}-bit word", path, shownName(name), bytes * 8));
    }
  }

  bool hasProgram(const std::string& name) const {
    return std::find(contents_.programs.begin(), contents_.programs.end(), name) != contents_.programs.end();
  }

  /// A per-CPU array of u64 counters (lost events, join counts), read `entries` deep.
  void counters(const std::string& path, const std::string& name, uint64_t entries, const char* why) {
    const ObjectMap* m = map(path, name);
    if (!m) return;
    std::string which = fmt::format("{} names map `{}`, which", path, shownName(name));
    if (m->type != BPF_MAP_TYPE_PERCPU_ARRAY) {
      fail(fmt::format("{} is {}, not a per-CPU array", which, typeText(m->type)));
    } else if (m->key_size != 4 || m->value_size != 8) {
      fail(fmt::format("{} has {}-byte keys and {}-byte values, not 4 and 8", which, m->key_size,
                       m->value_size));
    } else if (m->max_entries < entries) {
      fail(fmt::format("{} has {} entries; {} take {}", which, m->max_entries, why, entries));
    }
  }

 private:
  const ObjectContents& contents_;
  std::string problem_;
};

void compareAggregate(Comparison& c, const std::string& path, const plan::AggregateLayout& a) {
  const ObjectMap* m = c.map(path + ".map", a.map);
  if (!m) return;
  std::string map = fmt::format("map `{}`", shownName(a.map));
  if (a.key_size != m->key_size) {
    c.fail(fmt::format("{}.key_size is {} but {} has {}-byte keys", path, a.key_size, map, m->key_size));
  }
  if (a.value_size != m->value_size) {
    c.fail(fmt::format("{}.value_size is {} but {} has {}-byte values", path, a.value_size, map,
                       m->value_size));
  }
  if (a.per_cpu != isPerCpu(m->type)) {
    c.fail(fmt::format("{}.per_cpu is {} but {} is {}", path, a.per_cpu, map, typeText(m->type)));
  }
  // A keyless table is an entry of an array; the others are read key by key, and deleted.
  if (a.single ? !isArray(m->type) : !isHash(m->type)) {
    c.fail(fmt::format("{}.single is {} but {} is {}", path, a.single, map, typeText(m->type)));
  } else if (a.single && a.entry >= m->max_entries) {
    c.fail(fmt::format("{}.entry is {} but {} has {}", path, a.entry, map,
                       m->max_entries == 1 ? std::string("1 entry") : fmt::format("{} entries", m->max_entries)));
  }
}

/// The map list of the plan (what `--dump plan` shows) is the object's maps.
void compareMaps(Comparison& c, const plan::ProgramPlan& plan) {
  for (size_t i = 0; i < plan.maps.size(); ++i) {
    const plan::PlannedMap& planned = plan.maps[i];
    std::string path = fmt::format("maps[{}]", i);
    const ObjectMap* m = c.map(path + ".name", planned.name);
    if (!m) continue;
    std::string map = fmt::format("map `{}`", shownName(planned.name));
    const char* type = libbpf_bpf_map_type_str(static_cast<bpf_map_type>(m->type));
    if (!type || planned.type != type) {
      c.fail(fmt::format("{}.type is `{}` but {} is {}", path, shownName(planned.type), map,
                         typeText(m->type)));
    }
    if (planned.key_size != m->key_size) {
      c.fail(fmt::format("{}.key_size is {} but {} has {}-byte keys", path, planned.key_size, map,
                         m->key_size));
    }
    if (planned.value_size != m->value_size) {
      c.fail(fmt::format("{}.value_size is {} but {} has {}-byte values", path, planned.value_size,
                         map, m->value_size));
    }
    if (planned.max_entries != m->max_entries) {
      c.fail(fmt::format("{}.max_entries is {} but {} has {}", path, planned.max_entries, map,
                         m->max_entries));
    }
  }
}

/// Why libbpf should not open `elf`, or empty. libbpf 1.1 follows the type ids of an
/// object's BTF without checking them (its map definitions are read through them): they are
/// checked first, as a `--btf FILE` is.
std::string objectBtfProblem(const std::vector<char>& elf) {
  std::string error;
  std::optional<std::string> section = sectionContents(elf, ".BTF", &error);
  if (!section) return "";  // none: libbpf reads no types
  ::btf* raw = btf__new(section->data(), static_cast<uint32_t>(section->size()));
  if (!raw) return fmt::format("its BTF cannot be read: {}", std::strerror(errno));
  Result<std::unique_ptr<host::BtfView>> view = host::BtfView::copyOf(raw);
  btf__free(raw);
  if (!view) return "its BTF cannot be read: " + view.error().message;
  std::string problem = host::findMalformedType(view->get());
  return problem.empty() ? "" : "its BTF is malformed: " + problem;
}

}  // namespace

std::optional<ObjectContents> objectContents(const std::vector<char>& elf, std::string* error) {
  if (std::string problem = objectBtfProblem(elf); !problem.empty()) {
    *error = problem;
    return std::nullopt;
  }
  LibbpfCapture capture;  // libbpf's complaints of a broken object become the error
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "kq");
  bpf_object* object = bpf_object__open_mem(elf.data(), elf.size(), &opts);
  if (!object) {
    int err = errno;
    std::string said = capture.text();
    while (!said.empty() && said.back() == '\n') said.pop_back();
    said = said.substr(said.rfind('\n') + 1);
    *error = fmt::format("libbpf cannot read it: {}{}", std::strerror(err),
                         said.empty() ? "" : fmt::format(" ({})", said));
    return std::nullopt;
  }
  ObjectContents contents;
  bpf_program* program;
  bpf_object__for_each_program(program, object) contents.programs.push_back(bpf_program__name(program));
  bpf_map* map;
  bpf_object__for_each_map(map, object) {
    contents.maps.push_back({bpf_map__name(map), static_cast<uint32_t>(bpf_map__type(map)),
                             bpf_map__key_size(map), bpf_map__value_size(map),
                             bpf_map__max_entries(map)});
  }
  bpf_object__close(object);
  return contents;
}

std::string objectMismatch(const plan::ProgramPlan& plan, const ObjectContents& contents) {
  Comparison c(contents);
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    const std::string& name = plan.programs[i].function;
    if (!c.hasProgram(name)) {
      c.fail(fmt::format("programs[{}].function is `{}`, which is not a program of the object", i,
                         shownName(name)));
    }
  }
  compareMaps(c, plan);
  if (const ObjectMap* events = c.map("events_map", plan.events_map)) {
    if (events->type != BPF_MAP_TYPE_RINGBUF) {
      c.fail(fmt::format("events_map names map `{}`, which is {}, not a ring buffer",
                         shownName(plan.events_map), typeText(events->type)));
    }
  }
  uint64_t queries = plan.layout.queries;
  c.counters("lost_map", plan.lost_map, queries * plan::kLostReasons,
             fmt::format("the losses of {} {}", queries, queries == 1 ? "query" : "queries").c_str());
  for (size_t i = 0; i < plan.layout.probes.size(); ++i) {
    const plan::ProbeLayout& probe = plan.layout.probes[i];
    if (!probe.packet || probe.packet->lost_map.empty()) continue;
    c.counters(fmt::format("probes[{}].packet.lost_map", i), probe.packet->lost_map, probe.packet->sites.size(),
               fmt::format("the losses at {} packet sites", probe.packet->sites.size()).c_str());
  }
  if (!plan.tracked_map.empty()) c.map("tracked_map", plan.tracked_map);
  if (!plan.stops_map.empty()) {
    if (const ObjectMap* stops = c.map("stops_map", plan.stops_map)) {
      std::string which = fmt::format("stops_map names map `{}`, which", shownName(plan.stops_map));
      if (stops->type != BPF_MAP_TYPE_ARRAY) {
        c.fail(fmt::format("{} is {}, not an array", which, typeText(stops->type)));
      } else if (stops->key_size != 4) {
        c.fail(fmt::format("{} has {}-byte keys, not 4", which, stops->key_size));
      } else if (stops->max_entries == 1 && stops->value_size >= 4 * queries) {
        // kq's layout: one element, a 4-byte word a query (runtime/stop_words.h).
      } else if (stops->value_size != 4) {
        c.fail(fmt::format("{} has one {}-byte element, for {} queries' 4-byte words", which,
                           stops->value_size, queries));
      } else if (stops->max_entries < queries) {
        // An earlier kq's layout: an element a query.
        c.fail(fmt::format("{} has {} entries, for {} queries", which, stops->max_entries, queries));
      }
    }
  }
  c.oneWord("start_map", plan.start_map, 8);
  c.oneWord("pace_map", plan.pace_map, 4);
  if (!plan.joins.empty()) {
    uint64_t counters = 0;
    for (const plan::PlannedJoin& join : plan.joins) {
      counters = std::max<uint64_t>(counters, uint64_t{join.counters} + plan::kJoinCounts);
    }
    c.counters("join_counts_map", plan.join_counts_map, counters, "the joins' counters");
  }
  for (size_t i = 0; i < plan.joins.size(); ++i) c.map(fmt::format("joins[{}].map", i), plan.joins[i].map);
  for (size_t i = 0; i < plan.layout.aggregates.size(); ++i) {
    compareAggregate(c, fmt::format("aggregates[{}]", i), plan.layout.aggregates[i]);
  }
  return c.problem();
}

ObjectPlan readObjectPlan(const std::vector<char>& elf) {
  ObjectPlan out;
  std::optional<std::string> text = sectionContents(elf, kPlanSection, &out.error);
  if (!text) return out;
  out.has_plan = true;
  std::optional<plan::PortablePlan> plan = plan::decodePlan(*text, &out.error);
  if (!plan) return out;
  std::optional<ObjectContents> contents = objectContents(elf, &out.error);
  if (!contents) return out;
  out.error = objectMismatch(plan->plan, *contents);
  if (out.error.empty()) out.plan = std::move(plan);
  return out;
}

}  // namespace kq::runtime
