// Code generation: a checked program becomes one BPF ELF object (LLVM, -O2) with a program
// per probe and attach method, plus the event layouts the runtime formats records with.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/diag/diagnostic.h"
#include "compiler/lower/bpf_module.h"
#include "compiler/sema/sema.h"
#include "plan/event_layout.h"
#include "plan/program_plan.h"

namespace kq::lower {

struct LowerOptions {
  /// Only events of this process (its thread group). 0: every process.
  uint32_t pid = 0;
  /// Only events of processes in the `tracked` map (filled by the runtime, grown on fork).
  bool follow_children = false;
  /// The ring buffer's size in bytes; 0: sized from the query (ringBytesFor).
  uint32_t ringbuf_bytes = 0;
  /// Bytes kept of a string (str(), char arrays, tracepoint strings).
  uint32_t string_bytes = 64;
  /// Bytes kept of a string that is a `group by` key: more, since groups that differ only
  /// past them are one group (paths often share 64 bytes; a cut key is said beneath).
  uint32_t key_string_bytes = 256;
  /// Bytes kept of a struct shown as a typed dump.
  uint32_t dump_bytes = 1024;
  bool want_ir = false;
  bool want_asm = false;
  /// `packet`: also compile the tracepoint programs kernels without kprobes fall back to
  /// (about 30; under emulation, seconds of compiling a kernel with kprobes never uses).
  bool packet_tracepoints = true;
  /// Which of the plan's programs to compile (by index), asked once the plan is made and
  /// before LLVM optimizes anything. A live run leaves out the attach methods the running
  /// kernel can never load (runtime::programsThisKernelMayLoad): for a glob, most of the
  /// compile. Unset: every program (`kq build`, whose object runs on other kernels).
  std::function<std::vector<bool>(const plan::ProgramPlan&)> programs_to_compile;
  /// Each program at one place is also a slot of a live site, with its dispatcher
  /// (plan/live_site.h): the REPL's jobs, so that a job on a place another uses attaches
  /// nothing new.
  bool live_sites = false;
  /// With live_sites: whether a site is attached at `program`'s place with a free slot (the
  /// front end's keeper says). Its dispatcher is left out, as programs_to_compile leaves
  /// programs out: the load only puts the program in that slot (if the slot has gone by
  /// then, the program attaches on its own, and no later job shares its place).
  std::function<bool(const plan::PlannedProgram&)> site_attached;
  /// With live_sites: the literals a `where` compares are read from .rodata
  /// (literal_parameters.h), for a front end that keeps objects by their shape and loads
  /// one for other values (the interactive session, through the object cache).
  bool literal_parameters = false;
};

/// The ring buffer a query gets unless told otherwise: room for a burst of 2048 of its
/// largest record (`largest_record` bytes), as a power of two from 256 KiB to 4 MiB; one page
/// when no probe writes records (aggregates and joins are read from their maps). Its pages
/// are mapped into kq twice (the kernel's wrap-around view), so this is half of what it
/// adds to kq's resident memory.
uint32_t ringBytesFor(uint32_t largest_record);

struct CompiledProgram {
  EmittedObject object;
  /// Every planned program, including those `programs_to_compile` left out of the object
  /// (the loader's choice of methods passes over them all the same, saying why).
  plan::ProgramPlan plan;
  /// By program index: whether it was left out of `object`.
  std::vector<bool> left_out;
};

/// Compiles every query of `checked`. Reports what cannot be compiled as diagnostics;
/// `error` says why when LLVM itself fails.
std::optional<CompiledProgram> lowerProgram(const sema::CheckedProgram& checked,
                                            const btf::Btf& btf, const SourceManager& sources,
                                            FileId main_file,
                                            const LowerOptions& options, Diagnostics& diags,
                                            std::string* error);

/// Compiles `ext` into what ipftrace2 links with `ipft -e ext.o`
/// (../shared/reference/ipft-extension-abi.md): a hidden `module()` in `.text` and the BTF
/// description of its data. Reports what cannot be compiled as diagnostics; `error` says
/// why when LLVM itself fails.
std::optional<EmittedObject> lowerExtension(const sema::CheckedProgram& checked,
                                            const sema::ResolvedExtension& ext,
                                            const btf::Btf& btf, const SourceManager& sources,
                                            FileId main_file, Diagnostics& diags,
                                            std::string* error);

}  // namespace kq::lower
