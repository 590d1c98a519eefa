#include "driver/dump_plan.h"

#include <map>
#include <set>

#include <fmt/format.h>

namespace kq::driver {
namespace {

/// The programs of one (group, method): what they attach as, how many, their stack.
struct MethodSummary {
  std::set<std::string> kinds;
  size_t programs = 0;
  uint32_t stack = 0;
  std::vector<std::string> targets;
};

std::string joined(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : " + ") + s;
  return out;
}

/// `1-3, 5`: queries numbered from 1, runs of them as ranges.
std::string queryList(const std::set<uint32_t>& queries) {
  std::string out;
  for (auto it = queries.begin(); it != queries.end();) {
    uint32_t first = *it, last = *it;
    while (++it != queries.end() && *it == last + 1) last = *it;
    out += (out.empty() ? "" : ", ") +
           (first == last ? std::to_string(first + 1) : fmt::format("{}-{}", first + 1, last + 1));
  }
  return out;
}

void dumpPrograms(const plan::ProgramPlan& plan, std::ostream& out) {
  std::map<std::pair<uint32_t, uint32_t>, MethodSummary> methods;
  std::map<uint32_t, std::set<uint32_t>> group_queries;
  for (const plan::PlannedProgram& p : plan.programs) {
    group_queries[p.group].insert(p.queries.begin(), p.queries.end());
    MethodSummary& m = methods[{p.group, p.method}];
    m.kinds.insert(plan::attachName(p.attach));
    ++m.programs;
    m.stack = std::max(m.stack, p.stack_bytes);
    if (m.targets.size() < 3) m.targets.push_back(p.target);
  }
  out << fmt::format("programs: {}\n", plan.programs.size());
  uint32_t group = UINT32_MAX;
  for (const auto& [key, m] : methods) {
    if (key.first != group) {
      group = key.first;
      std::string name = group < plan.group_names.size() ? plan.group_names[group] : "?";
      // A group that serves several queries: their programs are shared (site_programs.h).
      const std::set<uint32_t>& queries = group_queries[group];
      if (queries.size() > 1) name += fmt::format(" (queries {})", queryList(queries));
      out << fmt::format("  group {}: {}\n", group, name);
      if (group < plan.group_notes.size() && !plan.group_notes[group].empty()) {
        out << fmt::format("    why: {}\n", plan.group_notes[group]);
      }
    }
    std::string targets;
    for (const std::string& t : m.targets) targets += (targets.empty() ? "" : ", ") + t;
    if (m.programs > m.targets.size()) targets += ", ...";
    out << fmt::format("    method {}: {}, {} program{}, stack {} B ({})\n", key.second,
                       joined(m.kinds), m.programs, m.programs == 1 ? "" : "s", m.stack, targets);
  }
}

/// `4.0 MiB`, `32 B per CPU`, `800.0 KiB + 80.0 KiB per CPU`.
std::string cost(uint64_t shared, uint64_t per_cpu) {
  if (!per_cpu) return byteSize(shared);
  std::string cpus = byteSize(per_cpu) + " per CPU";
  return shared ? byteSize(shared) + " + " + cpus : cpus;
}

void dumpMaps(const plan::ProgramPlan& plan, std::ostream& out) {
  out << fmt::format("maps: {}\n", plan.maps.size());
  uint64_t loaded = 0, loaded_per_cpu = 0, on_use = 0, on_use_per_cpu = 0;
  for (const plan::PlannedMap& m : plan.maps) {
    std::string shape = m.type == "ringbuf"
                            ? fmt::format("{} bytes", m.max_entries)
                            : fmt::format("key {} B, value {} B, {} entr{}", m.key_size, m.value_size,
                                          m.max_entries, m.max_entries == 1 ? "y" : "ies");
    std::string size = cost(m.bytes, m.bytes_per_cpu);
    out << fmt::format("  {:<12} {:<13} {:<44} {}\n", m.name, m.type, shape,
                       m.preallocated ? size : fmt::format("up to {} (allocated on use)", size));
    (m.preallocated ? loaded : on_use) += m.bytes;
    (m.preallocated ? loaded_per_cpu : on_use_per_cpu) += m.bytes_per_cpu;
  }
  out << fmt::format("map memory: {} when loaded, up to {} more as entries are added\n",
                     cost(loaded, loaded_per_cpu), cost(on_use, on_use_per_cpu));
}

}  // namespace

std::string byteSize(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  if (bytes < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
}

void dumpPlan(const plan::ProgramPlan& plan, std::ostream& out) {
  dumpPrograms(plan, out);
  dumpMaps(plan, out);
}

}  // namespace kq::driver
