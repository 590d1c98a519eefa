// The object being built, shared by the parts of code generation (internal to
// compiler/lower): the LLVM module, the CO-RE type cache, the plan the runtime will read,
// the maps with what each costs, and the per-CPU scratch map that holds what does not fit
// on the 512-byte BPF stack. The parts: probe_planner (which programs, methods and groups),
// record_layout (what each record and aggregate table holds), program_emitter (the code of
// a program), aggregate_emitter (map updates) and call_context (`a -> b`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/btf/btf.h"
#include "compiler/lower/bpf_module.h"
#include "compiler/lower/core_types.h"
#include "compiler/lower/literal_parameters.h"
#include "compiler/lower/lower.h"
#include "plan/program_plan.h"

namespace kq::lower {

/// One query's part of a program: what it does at one place, and where that is (as a
/// program of its own would attach). The object's programs are made of parts
/// (site_programs.h): one program per place, running each query's part in turn.
struct ProgramPart {
  plan::PlannedProgram planned;  // `function`: the name the program gets if it is the first
  std::string section;
  llvm::Function* fn = nullptr;
  uint32_t offset = 0;  // of the kq source it is for (the program's debug location)
  /// A part that only counts in a keyless table: once its query ended (its table shown
  /// then) what it counts is read by no one, so in a program of several parts it tests the
  /// session's word, once for the program, rather than its query's word at every event.
  /// (Its counts must end with the session's instant, when every printing part ends.)
  bool counts_only = false;
};

class ObjectBuilder {
 public:
  ObjectBuilder(const sema::CheckedProgram& checked, const btf::Btf& btf,
                const SourceManager& sources, const LowerOptions& options, Diagnostics& diags,
                FileId main_file);

  const sema::CheckedProgram& checked() const { return checked_; }
  const btf::Btf& btf() const { return btf_; }
  const LowerOptions& options() const { return options_; }
  Diagnostics& diags() { return diags_; }
  const SourceFile& source() const { return source_; }
  FileId mainFile() const { return main_file_; }
  /// The byte offset of a 1-based line and column (code points) of the main file.
  uint32_t offsetOf(uint32_t line, uint32_t column) const;
  BpfModule& module() { return module_; }
  CoreTypes& core() { return core_; }
  plan::ProgramPlan& plan() { return plan_; }

  /// The traced process id (`-p`), a constant of the object's .rodata: a loader can set it
  /// without compiling again. Read it with a volatile load.
  llvm::GlobalVariable* targetPid();
  /// A live site's literals (literal_parameters.h), none elsewhere; and the global of the
  /// object's .rodata that holds them (null when there are none).
  const LiteralParameters& literals() const { return literals_; }
  llvm::GlobalVariable* literalsGlobal();

  /// Adds a map, and to the plan with what it costs.
  llvm::GlobalVariable* addMap(const MapSpec& spec);
  uint32_t newGroup(const std::string& name);
  /// Says why `group`'s methods are these (`--dump plan`).
  void noteGroup(uint32_t group, std::string why);
  std::string programName();
  void addPart(ProgramPart part) { parts_.push_back(std::move(part)); }
  /// The index of the session's word in the stops map's element, after the queries': set
  /// with every query's when the session ends (runtime/stop_words.h).
  uint32_t sessionWord() const { return std::max<uint32_t>(1, static_cast<uint32_t>(checked_.program.queries.size())); }
  std::vector<ProgramPart>& parts() { return parts_; }
  /// The array of words that stop a query's parts of shared programs (made on first use).
  llvm::GlobalVariable* queryStops();
  /// `i1 kq.query_running(i32 query)`, called where a part starts to act (to record, count
  /// or keep): the site's program makes each call its query's word test, or true
  /// (site_programs.cpp), so that the parts' reads and filters come before the tests.
  llvm::Function* queryRunning();
  /// Takes `kq.query_running` out of the module once no call to it is left.
  void dropQueryRunning();
  /// The array of one 64-bit word the loader sets to when the session started (CLOCK_MONOTONIC,
  /// bpf_ktime_get_ns's clock): `elapsed` (made on first use).
  llvm::GlobalVariable* sessionStart();
  /// The one-word map in which the reader says how it reads the ring (plan::ProgramPlan::pace_map).
  llvm::GlobalVariable* ringPace();

  /// The query being lowered (the programs added now belong to it).
  uint32_t query = 0;
  /// The ring buffer records go through: declared first, sized by finishEvents.
  llvm::GlobalVariable* events = nullptr;
  llvm::GlobalVariable* lost = nullptr;
  llvm::GlobalVariable* tracked = nullptr;
  /// One all-zero value, as large as the largest aggregate value: new entries copy it.
  llvm::GlobalVariable* zeros = nullptr;
  /// The per-CPU counters of every join (plan::JoinCount), made on first use.
  llvm::GlobalVariable* joinCounts();

  // ---- scratch: per-CPU entries, sized to the program needing the most ------------------
  /// The scratch map (declared on first use).
  llvm::GlobalVariable* scratchMap();
  /// The entry a program uses. kprobe, tracepoint, uprobe and perf-event programs never
  /// run nested on one CPU (the kernel's bpf_prog_active guard), so they share entry 0;
  /// fentry, fexit and tp_btf programs can interrupt each other (`may_nest`): one each.
  uint32_t scratchEntry(bool may_nest);
  void needScratchBytes(uint32_t bytes);
  /// Gives the scratch map its size; call once every program is emitted.
  void finishScratch();
  /// Gives the ring buffer its size (LowerOptions::ringbuf_bytes, else ringBytesFor the
  /// largest record); call once every probe's layout is planned.
  void finishEvents();

 private:
  const sema::CheckedProgram& checked_;
  const btf::Btf& btf_;
  const LowerOptions& options_;
  Diagnostics& diags_;
  const SourceFile& source_;
  FileId main_file_;
  BpfModule module_;
  CoreTypes core_;
  plan::ProgramPlan plan_;
  uint32_t program_count_ = 0;
  std::vector<ProgramPart> parts_;
  llvm::GlobalVariable* query_stops_ = nullptr;
  llvm::Function* query_running_ = nullptr;
  llvm::GlobalVariable* session_start_ = nullptr;
  llvm::GlobalVariable* ring_pace_ = nullptr;
  llvm::GlobalVariable* scratch_ = nullptr;
  llvm::GlobalVariable* target_pid_ = nullptr;
  LiteralParameters literals_;
  llvm::GlobalVariable* literals_global_ = nullptr;
  llvm::GlobalVariable* join_counts_ = nullptr;
  uint32_t scratch_entries_ = 1;  // entry 0 is shared (see scratchEntry)
  uint32_t scratch_bytes_ = 0;
};

/// What a map takes at its fullest, as the kernel charges it (bpftool's bytes_memlock):
/// shared, and on each CPU.
struct MapCost {
  uint64_t shared = 0;
  uint64_t per_cpu = 0;
};
MapCost mapCost(const MapSpec& spec);

}  // namespace kq::lower
