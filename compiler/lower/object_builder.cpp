#include "compiler/lower/object_builder.h"

#include <algorithm>

#include <fmt/format.h>

namespace kq::lower {
namespace {

uint64_t round8(uint64_t n) { return (n + 7) / 8 * 8; }

const char* mapTypeName(MapType type) {
  switch (type) {
    case MapType::Hash: return "hash";
    case MapType::Array: return "array";
    case MapType::ProgArray: return "prog_array";
    case MapType::PercpuHash: return "percpu_hash";
    case MapType::PercpuArray: return "percpu_array";
    case MapType::LruHash: return "lru_hash";
    case MapType::Ringbuf: return "ringbuf";
  }
  return "?";
}


}  // namespace

MapCost mapCost(const MapSpec& spec) {
  // The kernel's own accounting (htab_map_mem_usage, array_map_mem_usage), to the byte
  // where it matters: an element of a hash map is a struct htab_elem (48 bytes) followed by
  // the key and the value (or, per CPU, a pointer to the values), each rounded to 8.
  constexpr uint64_t kHashElem = 48;
  uint64_t entries = spec.max_entries;
  uint64_t value = round8(spec.value_size);
  switch (spec.type) {
    case MapType::Hash:
    case MapType::LruHash: return {entries * (kHashElem + round8(spec.key_size) + value), 0};
    case MapType::PercpuHash: return {entries * (kHashElem + round8(spec.key_size) + 8), entries * value};
    case MapType::Array:
      // A mapped array's elements take whole pages.
      if (spec.flags & kMapMmapable) return {(entries * value + 4095) / 4096 * 4096, 0};
      return {entries * value, 0};
    case MapType::ProgArray: return {entries * value, 0};
    case MapType::PercpuArray: return {0, entries * value};
    case MapType::Ringbuf: return {entries, 0};
  }
  return {};
}

ObjectBuilder::ObjectBuilder(const sema::CheckedProgram& checked, const btf::Btf& btf,
                             const SourceManager& sources, const LowerOptions& options,
                             Diagnostics& diags, FileId main_file)
    : checked_(checked),
      btf_(btf),
      options_(options),
      diags_(diags),
      source_(sources.file(main_file)),
      main_file_(main_file),
      module_("kq", sources.file(main_file)),
      core_(module_) {
  if (options.live_sites && options.literal_parameters) literals_ = literalParameters(checked.program, main_file);
}

uint32_t ObjectBuilder::offsetOf(uint32_t line, uint32_t column) const {
  return source_.offsetOf({line, column});
}

llvm::GlobalVariable* ObjectBuilder::addMap(const MapSpec& spec) {
  plan::PlannedMap planned;
  planned.name = spec.name;
  planned.type = mapTypeName(spec.type);
  planned.key_size = spec.key_size;
  planned.value_size = spec.value_size;
  planned.max_entries = spec.max_entries;
  bool hash = spec.type == MapType::Hash || spec.type == MapType::PercpuHash;
  planned.preallocated = !(hash && (spec.flags & kMapNoPrealloc));
  MapCost cost = mapCost(spec);
  planned.bytes = cost.shared;
  planned.bytes_per_cpu = cost.per_cpu;
  plan_.maps.push_back(std::move(planned));
  return module_.addMap(spec);
}

llvm::GlobalVariable* ObjectBuilder::joinCounts() {
  if (!join_counts_) {
    uint32_t joins = 0;
    // A join's other sources count in its own counters (sema::ResolvedJoin::feeds).
    for (const sema::ResolvedQuery& query : checked_.program.queries) {
      for (const sema::ResolvedJoin& join : query.joins) joins += join.feeds ? 0 : 1;
    }
    join_counts_ = addMap({"join_counts", MapType::PercpuArray,
                           std::max<uint32_t>(joins, 1) * plan::kJoinCounts, 4, 8});
    plan_.join_counts_map = "join_counts";
  }
  return join_counts_;
}

uint32_t ObjectBuilder::newGroup(const std::string& name) {
  plan_.group_names.push_back(name);
  return static_cast<uint32_t>(plan_.group_names.size() - 1);
}

void ObjectBuilder::noteGroup(uint32_t group, std::string why) {
  if (plan_.group_notes.size() <= group) plan_.group_notes.resize(group + 1);
  plan_.group_notes[group] = std::move(why);
}

std::string ObjectBuilder::programName() { return fmt::format("kq_prog_{}", program_count_++); }

llvm::GlobalVariable* ObjectBuilder::queryStops() {
  if (!query_stops_) {
    // One element holding every query's word, then the session's: a program looks it up
    // once, then reads each of its queries' words at its offset; user space writes words
    // where it maps them.
    query_stops_ = addMap({"query_stops", MapType::Array, 1, 4, 4 * (sessionWord() + 1), kMapMmapable});
    plan_.stops_map = "query_stops";
  }
  return query_stops_;
}

llvm::Function* ObjectBuilder::queryRunning() {
  if (!query_running_) {
    llvm::LLVMContext& ctx = module_.context();
    auto* type = llvm::FunctionType::get(llvm::Type::getInt1Ty(ctx), {llvm::Type::getInt32Ty(ctx)}, false);
    query_running_ = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, "kq.query_running",
                                            module_.module());
    query_running_->setDoesNotAccessMemory();
  }
  return query_running_;
}

void ObjectBuilder::dropQueryRunning() {
  if (query_running_ && query_running_->use_empty()) {
    query_running_->eraseFromParent();
    query_running_ = nullptr;
  }
}

llvm::GlobalVariable* ObjectBuilder::sessionStart() {
  if (!session_start_) {
    session_start_ = addMap({"session_start", MapType::Array, 1, 4, 8});
    plan_.start_map = "session_start";
  }
  return session_start_;
}

llvm::GlobalVariable* ObjectBuilder::ringPace() {
  if (!ring_pace_) {
    ring_pace_ = addMap({"ring_pace", MapType::Array, 1, 4, 4});
    plan_.pace_map = "ring_pace";
  }
  return ring_pace_;
}

llvm::GlobalVariable* ObjectBuilder::targetPid() {
  if (target_pid_) return target_pid_;
  llvm::LLVMContext& ctx = module_.context();
  auto* type = llvm::Type::getInt32Ty(ctx);
  target_pid_ = new llvm::GlobalVariable(module_.module(), type, true,
                                         llvm::GlobalValue::ExternalLinkage,
                                         llvm::ConstantInt::get(type, options_.pid), "kq_target_pid");
  target_pid_->setSection(".rodata");
  target_pid_->setAlignment(llvm::Align(4));
  llvm::DIBuilder& di = module_.di();
  auto* int_type = di.createBasicType("unsigned int", 32, llvm::dwarf::DW_ATE_unsigned);
  auto* qualified = di.createQualifiedType(llvm::dwarf::DW_TAG_volatile_type,
                                           di.createQualifiedType(llvm::dwarf::DW_TAG_const_type, int_type));
  target_pid_->addDebugInfo(di.createGlobalVariableExpression(module_.unit(), "kq_target_pid", "",
                                                              module_.file(), 0, qualified, false));
  return target_pid_;
}

llvm::GlobalVariable* ObjectBuilder::literalsGlobal() {
  if (literals_global_ || literals_.empty()) return literals_global_;
  llvm::LLVMContext& ctx = module_.context();
  auto* type = llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), literals_.bytes.size());
  std::string name(kLiteralParametersSymbol);
  literals_global_ = new llvm::GlobalVariable(module_.module(), type, true, llvm::GlobalValue::ExternalLinkage,
                                              llvm::ConstantDataArray::get(ctx, literals_.bytes), name);
  literals_global_->setSection(".rodata");
  literals_global_->setAlignment(llvm::Align(8));
  llvm::DIBuilder& di = module_.di();
  auto* byte = di.createQualifiedType(
      llvm::dwarf::DW_TAG_volatile_type,
      di.createQualifiedType(llvm::dwarf::DW_TAG_const_type,
                             di.createBasicType("unsigned char", 8, llvm::dwarf::DW_ATE_unsigned_char)));
  auto* array = di.createArrayType(8 * literals_.bytes.size(), 64, byte,
                                   di.getOrCreateArray({di.getOrCreateSubrange(0, literals_.bytes.size())}));
  literals_global_->addDebugInfo(
      di.createGlobalVariableExpression(module_.unit(), name, "", module_.file(), 0, array, false));
  return literals_global_;
}

llvm::GlobalVariable* ObjectBuilder::scratchMap() {
  if (!scratch_) scratch_ = module_.declareMap("scratch");
  return scratch_;
}

uint32_t ObjectBuilder::scratchEntry(bool may_nest) { return may_nest ? scratch_entries_++ : 0; }

void ObjectBuilder::needScratchBytes(uint32_t bytes) { scratch_bytes_ = std::max(scratch_bytes_, bytes); }

void ObjectBuilder::finishScratch() {
  if (!scratch_) return;
  MapSpec spec{"scratch", MapType::PercpuArray, scratch_entries_, 4,
               std::max<uint32_t>(round8(scratch_bytes_), 8)};
  MapCost cost = mapCost(spec);
  plan::PlannedMap planned{spec.name, "percpu_array", spec.key_size, spec.value_size,
                              spec.max_entries, true, cost.shared, cost.per_cpu};
  plan_.maps.push_back(planned);
  scratch_ = module_.describeMap(scratch_, spec);
}

uint32_t ringBytesFor(uint32_t largest_record) {
  constexpr uint32_t kBurst = 2048, kLeast = 256 << 10, kMost = 4 << 20, kPage = 4096;
  if (largest_record == 0) return kPage;
  // Each record has an 8-byte header in the ring and starts 8-byte aligned.
  uint64_t burst = uint64_t{kBurst} * ((uint64_t{largest_record} + 8 + 7) / 8 * 8);
  uint32_t bytes = kLeast;
  while (bytes < burst && bytes < kMost) bytes *= 2;
  return bytes;
}

void ObjectBuilder::finishEvents() {
  uint32_t largest = 0;
  for (const plan::ProbeLayout& probe : plan_.layout.probes) {
    if (probe.writes_records) largest = std::max(largest, probe.size);
  }
  MapSpec spec{"events", MapType::Ringbuf,
               options_.ringbuf_bytes ? options_.ringbuf_bytes : ringBytesFor(largest)};
  MapCost cost = mapCost(spec);
  // First in the plan's list of maps, as it is first in the object.
  plan_.maps.insert(plan_.maps.begin(), plan::PlannedMap{spec.name, "ringbuf", 0, 0,
                                                             spec.max_entries, true, cost.shared,
                                                             cost.per_cpu});
  events = module_.describeMap(events, spec);
}

}  // namespace kq::lower
