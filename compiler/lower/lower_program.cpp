// The entry point of code generation: the object's shared maps, each query's aggregation
// and parts (probe_planner.cpp), the programs made of them (site_programs.cpp), and LLVM's
// errors turned into kq diagnostics.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/lower/probe_planner.h"
#include "compiler/lower/site_programs.h"
#include "plan/live_site.h"

namespace kq::lower {
namespace {

/// The largest aggregate value kept per CPU (a few counters; not histograms).
constexpr uint32_t kPerCpuValueBytes = 64;

/// Why LLVM could not compile the object, located at the kq expression its debug
/// location names.
void reportProblems(ObjectBuilder& object, FileId main_file) {
  for (const CodegenProblem& problem : object.module().problems()) {
    uint32_t at = object.offsetOf(problem.line, problem.column);
    bool stack = problem.message.find("stack limit") != std::string::npos;
    Diagnostic& d = object.diags().report(
        DiagKind::ResourceLimit, SourceRange{main_file, at, at},
        stack ? "this query's program needs more than the 512 bytes of stack a BPF program has"
              : "LLVM cannot compile this query's program: " + problem.message);
    if (stack) d.note("split the work between queries, or compare fewer strings at once");
  }
}

}  // namespace

std::optional<CompiledProgram> lowerProgram(const sema::CheckedProgram& checked,
                                            const btf::Btf& btf, const SourceManager& sources,
                                            FileId main_file, const LowerOptions& options,
                                            Diagnostics& diags, std::string* error) {
  ObjectBuilder object(checked, btf, sources, options, diags, main_file);
  plan::ProgramPlan& plan = object.plan();
  object.events = object.module().declareMap("events");
  // Each query counts its own losses: kLostReasons counters a query.
  uint32_t query_count = std::max<uint32_t>(1, static_cast<uint32_t>(checked.program.queries.size()));
  object.lost = object.addMap({"lost", MapType::PercpuArray, plan::kLostReasons * query_count, 4, 8});
  if (options.follow_children) {
    object.tracked = object.addMap({"tracked", MapType::Hash, 65536, 4, 1, kMapNoPrealloc});
    plan.tracked_map = "tracked";
  }

  // Aggregations first: the all-zero value new entries copy is as large as the largest.
  LayoutOptions layout_options{options.key_string_bytes, options.dump_bytes, false};
  const auto& queries = checked.program.queries;
  std::vector<std::unique_ptr<Aggregation>> aggregations(queries.size());
  uint32_t largest = 0;
  uint32_t groups = checked.program.config.max_groups ? checked.program.config.max_groups : plan::kAggregateGroups;
  for (size_t q = 0; q < queries.size(); ++q) {
    if (!queries[q].aggregates || queries[q].probes.empty() || queries[q].probes.front().chain.empty()) continue;
    const sema::ResolvedProbe& first = queries[q].probes.front();
    bool packet = std::holds_alternative<ast::PacketTarget>(first.chain.back().target->kind);
    layout_options.func_is_address = first.chain.back().functions.size() > 1 || packet;
    layout_options.packet_sites = packet ? &first.chain.back().packet_sites : nullptr;
    layout_options.joins = &queries[q].joins;
    aggregations[q] = aggregationOf(queries[q], first, static_cast<uint32_t>(q), layout_options);
    // Small values are per CPU (no cache line for busy CPUs to fight over); histograms,
    // whose values are large, are shared.
    aggregations[q]->layout.per_cpu = aggregations[q]->layout.value_size <= kPerCpuValueBytes;
  }
  // Keyless tables whose values are alike share one array, an entry each, there from the
  // start (one map to find for 50 `count()`s, not 50).
  std::map<uint32_t, uint32_t> keyless;  // value size: tables
  for (const auto& a : aggregations) {
    if (a && a->layout.single) ++keyless[a->layout.value_size];
  }
  std::map<uint32_t, std::pair<llvm::GlobalVariable*, uint32_t>> shared;  // value size: array, entries taken
  for (const auto& a : aggregations) {
    if (!a) continue;
    plan::AggregateLayout& layout = a->layout;
    if (layout.single && keyless[layout.value_size] == 1) {
      a->map = object.addMap({layout.map, layout.per_cpu ? MapType::PercpuArray : MapType::Array,
                              1, layout.key_size, layout.value_size});
    } else if (layout.single) {
      auto& [array, taken] = shared[layout.value_size];
      layout.map = fmt::format("agg_keyless_{}", layout.value_size);
      if (!array) {
        array = object.addMap({layout.map, layout.per_cpu ? MapType::PercpuArray : MapType::Array,
                               keyless[layout.value_size], layout.key_size, layout.value_size});
      }
      a->map = array;
      layout.entry = taken++;
    } else {
      // Entries are allocated as groups appear: a table of few groups costs little.
      a->map = object.addMap({layout.map, layout.per_cpu ? MapType::PercpuHash : MapType::Hash,
                              groups, layout.key_size, layout.value_size, kMapNoPrealloc});
      largest = std::max(largest, layout.value_size);
    }
    plan.layout.aggregates.push_back(layout);
  }
  if (largest) object.zeros = object.addMap({"agg_zeros", MapType::Array, 1, 4, largest});

  ProbePlanner planner(object);
  for (size_t q = 0; q < queries.size(); ++q) {
    planner.lowerQuery(queries[q], static_cast<uint32_t>(q), aggregations[q].get());
  }
  plan.layout.queries = static_cast<uint32_t>(queries.size());
  for (const sema::ResolvedQuery& query : queries) plan.layout.query_names.push_back(query.query->name);
  if (diags.hasErrors()) return std::nullopt;
  if (options.follow_children) planner.emitter().emitForkFollower();
  makeSitePrograms(object);
  object.finishScratch();
  object.finishEvents();
  std::vector<bool> left_out(plan.programs.size(), false);
  if (options.programs_to_compile) {
    std::vector<bool> wanted = options.programs_to_compile(plan);
    for (size_t i = 0; i < plan.programs.size() && i < wanted.size(); ++i) {
      if (wanted[i]) continue;
      object.module().dropProgram(plan.programs[i].function);
      if (options.live_sites) object.module().dropProgram(plan::liveDispatcher(plan.programs[i].function));
      left_out[i] = true;
    }
  }
  if (options.live_sites && options.site_attached) {
    for (size_t i = 0; i < plan.programs.size(); ++i) {
      if (!left_out[i] && options.site_attached(plan.programs[i])) {
        object.module().dropProgram(plan::liveDispatcher(plan.programs[i].function));
      }
    }
  }

  auto emitted = object.module().emit(options.want_ir, options.want_asm);
  if (!emitted) {
    if (!object.module().problems().empty()) {
      reportProblems(object, main_file);
      return std::nullopt;
    }
    *error = emitted.error().message;
    return std::nullopt;
  }
  return CompiledProgram{emitted.take(), std::move(plan), std::move(left_out)};
}

}  // namespace kq::lower
