#include "plan/plan_check.h"

#include <climits>
#include <map>
#include <set>

#include <fmt/format.h>

namespace kq::plan {
namespace {

std::string at(const std::string& path, const char* key) {
  return path.empty() ? key : path + "." + key;
}
std::string at(const std::string& path, size_t index) { return fmt::format("{}[{}]", path, index); }

std::string plural(size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}
/// `there is 1 field`, `there are 5 fields`.
std::string thereAre(size_t n, const char* one, const char* many) {
  return fmt::format("there {} {}", n == 1 ? "is" : "are", plural(n, one, many));
}

/// The first problem found: later ones are not looked for.
class Checks {
 public:
  void fail(const std::string& path, const std::string& message) {
    if (problem_.empty()) problem_ = path + " " + message;
  }
  const std::string& problem() const { return problem_; }

 private:
  std::string problem_;
};

/// An index of one of `count` things (a field, a slot, a group).
bool names(int64_t index, size_t count) { return index >= 0 && static_cast<uint64_t>(index) < count; }

/// A field index that is -1 (none) or names one of `fields` holding an address or a count:
/// the runtime reads 8 bytes at that field's offset (a record's address, a packet's facts).
void checkEightByteField(Checks& c, const std::string& path, int32_t index,
                         const std::vector<FieldLayout>& fields) {
  if (index == -1) return;
  if (!names(index, fields.size())) {
    return c.fail(path, fmt::format("is {}, but {}", index, thereAre(fields.size(), "field", "fields")));
  }
  const FieldLayout& f = fields[index];
  if (f.size < 8) {
    c.fail(path, fmt::format("names field {} (`{}`), which holds {} bytes, not 8", index,
                             shownName(f.name), f.size));
  }
}

/// `fields`, read from a record or key of `bytes` bytes: each inside it, each field index
/// naming one of them.
void checkFields(Checks& c, const std::string& path, const std::vector<FieldLayout>& fields,
                 uint64_t bytes, const char* what) {
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldLayout& f = fields[i];
    std::string here = at(path, i);
    if (uint64_t{f.offset} + f.size > bytes) {
      c.fail(here, fmt::format("(`{}`) lies outside its {}-byte {}: {} bytes at offset {}",
                               shownName(f.name), bytes, what, f.size, f.offset));
    }
    checkEightByteField(c, at(here, "address_field"), f.address_field, fields);
    for (size_t a = 0; a < f.args.size(); ++a) {
      if (!names(f.args[a], fields.size())) {
        c.fail(at(at(here, "args"), a), fmt::format("is {}, but {}", f.args[a],
                                                    thereAre(fields.size(), "field", "fields")));
      }
    }
  }
}

std::string int128Text(__int128 n) {
  if (n < 0) return "-" + int128Text(-n);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(n % 10)));
    n /= 10;
  } while (n);
  return digits;
}

/// lhist(x, lo, hi, step): below `lo`, ceil((hi - lo) / step) buckets of `step`, from `hi`
/// up (compiler/lower/record_layout.cpp's rule); every bound an i64 (engine/table.cpp).
void checkLinearBuckets(Checks& c, const std::string& path, const AggregateSlot& s) {
  if (s.step <= 0 || s.lo >= s.hi) {
    return c.fail(path, fmt::format("(`{}`) has lo {}, hi {} and step {}: an Lhist needs lo "
                                    "below hi and a positive step",
                                    shownName(s.name), s.lo, s.hi, s.step));
  }
  __int128 inner = (static_cast<__int128>(s.hi) - s.lo + s.step - 1) / s.step;
  if (s.buckets != inner + 2) {
    return c.fail(at(path, "buckets"), fmt::format("is {}, but lo {}, hi {} and step {} make {}",
                                                   s.buckets, s.lo, s.hi, s.step,
                                                   int128Text(inner + 2)));
  }
  if (s.lo + inner * s.step > INT64_MAX) {
    c.fail(path, fmt::format("(`{}`) has a bucket that ends past the largest i64", shownName(s.name)));
  }
}

// The hooks: each checks what one struct says of itself and of its members. walk() calls
// the hook of every struct of the plan, wherever it is, with its path; a struct with
// nothing to check has none.

template <class T> void check(Checks&, const std::string&, const T&) {}

void check(Checks& c, const std::string& path, const FieldLayout& f) {
  uint32_t reads = fieldReadBytes(f.kind);
  if (f.size < reads) {
    c.fail(at(path, "size"), fmt::format("is {}, but a field of kind {} is read as {} bytes",
                                         f.size, fieldKindName(f.kind), reads));
  }
  if (f.int_bytes < 1 || f.int_bytes > 8) {
    c.fail(at(path, "int_bytes"), fmt::format("is {}, not 1 to 8", f.int_bytes));
  }
}

void check(Checks& c, const std::string& path, const ProbeLayout& p) {
  if (p.size < sizeof(EventHeader)) {
    c.fail(at(path, "size"), fmt::format("is {}, less than a record's {}-byte header", p.size,
                                         sizeof(EventHeader)));
  }
  checkFields(c, at(path, "fields"), p.fields, p.size, "record");
  checkEightByteField(c, at(path, "name_field"), p.name_field, p.fields);
  if (p.name_field >= 0 && static_cast<size_t>(p.name_field) < p.fields.size() &&
      p.fields[p.name_field].kind != FieldKind::Table) {
    c.fail(at(path, "name_field"), fmt::format("names field {} (`{}`), which is no Table", p.name_field,
                                                shownName(p.fields[p.name_field].name)));
  }
  if (!p.packet) return;
  const PacketLayout& packet = *p.packet;
  std::string here = at(path, "packet");
  checkEightByteField(c, at(here, "skb_field"), packet.skb_field, p.fields);
  checkEightByteField(c, at(here, "site_field"), packet.site_field, p.fields);
  checkEightByteField(c, at(here, "return_field"), packet.return_field, p.fields);
  checkEightByteField(c, at(here, "reason_field"), packet.reason_field, p.fields);
  checkEightByteField(c, at(here, "journey_field"), packet.journey_field, p.fields);
  checkEightByteField(c, at(here, "verdict_field"), packet.verdict_field, p.fields);
  if (packet.modules.size() != packet.sites.size() || packet.frees.size() != packet.sites.size()) {
    c.fail(here, fmt::format("has {}, {} and {}: one of each per site",
                             plural(packet.sites.size(), "site", "sites"),
                             plural(packet.modules.size(), "module", "modules"),
                             plural(packet.frees.size(), "free", "frees")));
  }
}

void check(Checks& c, const std::string& path, const AggregateSlot& s) {
  if (s.kind == AggregateKind::Hist && s.buckets != kHistBuckets) {
    c.fail(at(path, "buckets"), fmt::format("is {}, but a Hist has {}", s.buckets, kHistBuckets));
  }
  if (s.kind == AggregateKind::Lhist) checkLinearBuckets(c, path, s);
}

void check(Checks& c, const std::string& path, const AggregateLayout& a) {
  if (a.interval_bytes != 0 && a.interval_bytes != 8) {
    c.fail(at(path, "interval_bytes"), fmt::format("is {}, not 0 or 8", a.interval_bytes));
  } else if (a.interval_bytes > a.key_size) {
    c.fail(at(path, "interval_bytes"),
           fmt::format("is {}, more than its {}-byte key", a.interval_bytes, a.key_size));
  }
  checkFields(c, at(path, "keys"), a.keys, a.key_size, "key");
  for (size_t i = 0; i < a.slots.size(); ++i) {
    const AggregateSlot& s = a.slots[i];
    if (s.offset + slotBytes(s) > a.value_size) {
      c.fail(at(at(path, "slots"), i),
             fmt::format("(`{}`) lies outside its {}-byte value: {} bytes at offset {}",
                         shownName(s.name), a.value_size, slotBytes(s), s.offset));
    }
  }
  for (size_t i = 0; i < a.columns.size(); ++i) {
    auto [is_key, index] = a.columns[i];
    size_t count = is_key ? a.keys.size() : a.slots.size();
    if (index >= count) {
      c.fail(at(at(path, "columns"), i),
             fmt::format("names {} {}, but {}", is_key ? "key" : "slot", index,
                         is_key ? thereAre(count, "key", "keys") : thereAre(count, "slot", "slots")));
    }
  }
  if (a.single && (!a.keys.empty() || a.interval_bytes)) {
    c.fail(at(path, "single"), "is true, but the table has keys");
  }
  if (!a.single && a.entry != 0) {
    c.fail(at(path, "entry"), fmt::format("is {}, but only a keyless table is an entry of an array", a.entry));
  }
}

/// Programs: each of a group that exists, of a query that exists, its name its own, its
/// methods numbered from 0 with none left out (the runtime tries them in order).
void checkPrograms(Checks& c, const std::string& path, const ProgramPlan& plan) {
  size_t groups = plan.group_names.size();
  std::map<std::string, size_t> by_name;
  std::map<uint32_t, std::set<uint32_t>> methods;
  for (const PlannedProgram& p : plan.programs) methods[p.group].insert(p.method);
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    const PlannedProgram& p = plan.programs[i];
    std::string here = at(at(path, "programs"), i);
    auto [first, added] = by_name.emplace(p.function, i);
    if (!added) c.fail(at(here, "function"), fmt::format("is `{}`, as is programs[{}]'s",
                                                         shownName(p.function), first->second));
    if (p.group >= groups) {
      c.fail(at(here, "group"), fmt::format("is {}, but the plan names {}", p.group,
                                            plural(groups, "group", "groups")));
    } else if (const std::set<uint32_t>& numbers = methods[p.group]; p.method >= numbers.size()) {
      uint32_t missing = 0;
      while (numbers.count(missing)) ++missing;
      c.fail(at(here, "method"),
             fmt::format("is {}, but group {} (`{}`) has no method {}: a group's methods are "
                         "numbered from 0", p.method, p.group,
                         shownName(plan.group_names[p.group]), missing));
    }
    if (p.queries.empty() && !p.whole_session) {
      c.fail(at(here, "queries"), "is empty: a program runs the parts of at least one query");
    }
    for (size_t q = 0; q < p.queries.size(); ++q) {
      if (p.queries[q] >= plan.layout.queries) {
        c.fail(at(at(here, "queries"), q), fmt::format("is {}, but the plan has {}", p.queries[q],
                                                       plural(plan.layout.queries, "query", "queries")));
      } else if (q > 0 && p.queries[q] <= p.queries[q - 1]) {
        c.fail(at(at(here, "queries"), q), fmt::format("is {}, after {}: a program's queries are "
                                                       "listed once each, in order",
                                                       p.queries[q], p.queries[q - 1]));
      }
    }
    if (p.queries.size() > 1 && plan.stops_map.empty()) {
      c.fail(at(here, "queries"), fmt::format("has {}, but the plan has no stops_map to end one of them",
                                              plural(p.queries.size(), "query", "queries")));
    }
    if (!p.cookies.empty() && p.cookies.size() != p.symbols.size()) {
      c.fail(at(here, "cookies"), fmt::format("has {} for {}", plural(p.cookies.size(), "entry", "entries"),
                                              plural(p.symbols.size(), "symbol", "symbols")));
    }
  }
}

void check(Checks& c, const std::string& path, const ProgramPlan& plan) {
  uint32_t queries = plan.layout.queries;
  if (queries == 0) c.fail(at(path, "queries"), "is 0: a plan runs at least one query");
  checkPrograms(c, path, plan);
  auto queryOf = [&](const std::string& path, uint32_t query) {
    if (query >= queries) {
      c.fail(at(path, "query"), fmt::format("is {}, but the plan has {}", query,
                                            plural(queries, "query", "queries")));
    }
  };
  for (size_t i = 0; i < plan.layout.probes.size(); ++i) queryOf(at(at(path, "probes"), i), plan.layout.probes[i].query);
  for (size_t i = 0; i < plan.layout.aggregates.size(); ++i) {
    queryOf(at(at(path, "aggregates"), i), plan.layout.aggregates[i].query);
  }
  for (size_t i = 0; i < plan.joins.size(); ++i) queryOf(at(at(path, "joins"), i), plan.joins[i].query);
  size_t groups = plan.group_names.size();
  if (plan.group_notes.size() > groups) {
    c.fail(at(path, "group_notes"), fmt::format("has {} for {}", plural(plan.group_notes.size(), "entry", "entries"),
                                      plural(groups, "group", "groups")));
  }
  auto named = [&](const char* name, const auto& numbers, bool none_allowed) {
    for (size_t i = 0; i < numbers.size(); ++i) {
      auto n = static_cast<int64_t>(numbers[i]);
      if ((n >= 0 && static_cast<size_t>(n) < groups) || (none_allowed && n == -1)) continue;
      c.fail(at(at(path, name), i), fmt::format("is {}, but the plan names {}", n, plural(groups, "group", "groups")));
    }
  };
  named("packet_groups", plan.packet_groups, false);
  named("optional_groups", plan.optional_groups, false);
  named("packet_program_groups", plan.packet_program_groups, true);
  if (!plan.packet_program_groups.empty() && plan.packet_program_groups.size() != plan.packet_groups.size()) {
    c.fail(at(path, "packet_program_groups"), fmt::format("has {} for {}", plural(plan.packet_program_groups.size(), "entry", "entries"),
                                                         plural(plan.packet_groups.size(), "packet group", "packet groups")));
  }
  std::map<std::string, size_t> maps;
  for (size_t i = 0; i < plan.maps.size(); ++i) {
    auto [first, added] = maps.emplace(plan.maps[i].name, i);
    if (!added) c.fail(at(at(at(path, "maps"), i), "name"), fmt::format("is `{}`, as is maps[{}]'s",
                                                              shownName(plan.maps[i].name), first->second));
  }
  if (plan.events_map.empty()) c.fail(at(path, "events_map"), "is empty: events need a ring buffer");
  if (plan.lost_map.empty()) c.fail(at(path, "lost_map"), "is empty: losses need counters");
  if (!plan.joins.empty() && plan.join_counts_map.empty()) {
    c.fail(at(path, "join_counts_map"), "is empty, but joins need counters");
  }
}

void check(Checks& c, const std::string& path, const PortablePlan& p) {
  if (p.limits.size() != p.plan.layout.queries) {
    c.fail(at(path, "limits"), fmt::format("has {}, but the plan has {}", plural(p.limits.size(), "entry", "entries"),
                                 plural(p.plan.layout.queries, "query", "queries")));
  }
  if (p.query_sources.size() != p.plan.layout.queries) {
    c.fail(at(path, "query_sources"),
           fmt::format("has {}, but the plan has {}", plural(p.query_sources.size(), "entry", "entries"),
                       plural(p.plan.layout.queries, "query", "queries")));
  }
}

/// Calls the hook of `value` and of every struct within it.
template <class T> void walk(Checks& c, const std::string& path, const T& value) {
  if constexpr (kHasFields<T>) {
    check(c, path, value);
    T::eachField([&](const char* key, const auto& member) { walk(c, *key ? at(path, fieldName(key)) : path, member); },
              value);
  } else if constexpr (IsVector<T>::value) {
    if constexpr (kHasFields<typename T::value_type>) {
      for (size_t i = 0; i < value.size(); ++i) walk(c, at(path, i), value[i]);
    }
  } else if constexpr (IsOptional<T>::value) {
    if (value) walk(c, path, *value);
  }
}

}  // namespace

std::string shownName(const std::string& text) {
  std::string out;
  for (char ch : text.substr(0, 64)) {
    auto byte = static_cast<unsigned char>(ch);
    out += byte < 0x20 || byte == 0x7f ? fmt::format("\\x{:02x}", byte) : std::string(1, ch);
  }
  return text.size() > 64 ? out + "..." : out;
}

std::string planProblem(const PortablePlan& plan) {
  Checks checks;
  walk(checks, "", plan);
  return checks.problem();
}

}  // namespace kq::plan
