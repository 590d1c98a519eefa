// Which programs each probe gets, in which groups and methods (the protocol is written down
// in runtime/program_plan.h): fentry, kprobe.multi and kprobe for kernel functions, tp_btf
// or a classic tracepoint for tracepoints, classic tracepoints for syscalls, uprobes,
// perf events, and at exit the entry programs that stash arguments. It decides; the
// program emitter writes the code. Internal to compiler/lower.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "compiler/lower/program_emitter.h"

namespace kq::lower {

class ProbePlanner {
 public:
  explicit ProbePlanner(ObjectBuilder& object) : object_(object), emitter_(object) {}

  /// Plans and emits the programs of every probe of `query`.
  void lowerQuery(const sema::ResolvedQuery& query, uint32_t query_number,
                  const Aggregation* aggregation);
  ProgramEmitter& emitter() { return emitter_; }

 private:
  /// One probe of `query`: its own (`joins`: the query's joins, looked up by its events), or
  /// a join's source (`keeps`: the join it keeps events for).
  void lowerProbe(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                  uint32_t query_number, const Aggregation* aggregation, const JoinTable* keeps,
                  std::vector<const JoinTable*> joins);
  void addCallContext(ProbeUnit& p);
  /// A named function or a glob: fentry for each function, else one kprobe.multi program
  /// for them all (unless `func` is in `where`), else a kprobe each; one group.
  void lowerFunctions(ProbeUnit& p);
  void lowerFunction(const ProbeUnit& p, const btf::Function& fn, uint32_t group,
                     uint32_t kprobe_method);
  void lowerKprobeMulti(const ProbeUnit& p, uint32_t group);
  void lowerBpfPrograms(const ProbeUnit& p);
  /// `packet`'s XDP and TC programs: fexit on each, in a group that may attach nothing.
  void lowerPacketPrograms(const ProbeUnit& p);
  /// nft_do_chain's return in packet mode (PacketSite::netfilter), in a group of its own.
  void lowerNetfilterVerdicts(const ProbeUnit& p);
  /// Makes the site of one attach method (`fentry`, `fexit`) at the place being lowered.
  using SiteAt = std::function<ProgramSite(const char* kind, plan::Attach attach, ArgAccess args)>;
  /// fentry on a function; at exit, fentry keeping the entry time and fexit reading the
  /// arguments and the return value (argument `nargs`), meeting at site `where`.
  void lowerTrampoline(const ProbeUnit& p, const SiteAt& at, uint32_t nargs, uint64_t where);
  void lowerTracepoint(const ProbeUnit& p);
  /// `syscall:NAME`: raw_syscalls filtered to the call's number, then the syscalls
  /// tracepoint as the fallback method (or only that, where kq cannot use raw_syscalls).
  void lowerSyscall(const ProbeUnit& p);
  /// `tracepoint:syscalls:sys_enter_NAME` or `sys_exit_NAME` through raw_syscalls, where
  /// kq can (x86-64, a known number); false where it cannot.
  bool lowerSyscallTracepoint(const ProbeUnit& p);
  /// A glob of syscalls that all have numbers: raw_syscalls filtered to them, then a
  /// tracepoint each as the fallback, sharing one layout.
  void lowerSyscallGlob(const ProbeUnit& p);
  void lowerRawSyscall(const ProbeUnit& p, const std::vector<uint32_t>& nrs, uint32_t group,
                       const std::vector<btf::MemberSteps>& compat);
  /// `glob_nr`: the call's number, when it is one of a glob's (lowerSyscallGlob).
  void lowerClassicSyscall(const ProbeUnit& p, const std::string& name, uint32_t group,
                           uint32_t method, std::optional<uint32_t> glob_nr = std::nullopt);
  void lowerEventGlob(const ProbeUnit& p);
  void lowerUprobe(const ProbeUnit& p, const ast::UprobeTarget& u, const std::string& symbol);
  void lowerUsdt(const ProbeUnit& p, const ast::UsdtTarget& u);
  void lowerPacket(const ProbeUnit& p);
  /// A packet probe's view (plan::PacketLayout) and its `track` and `graph` maps.
  void addPacketState(ProbeUnit& p, plan::ProbeLayout& layout, uint32_t query_number);
  /// A perf event's program: the event, how often, where (plan::PlannedProgram says more).
  struct PerfSampling {
    uint64_t period;
    uint64_t frequency_hz;
    uint32_t type;
    uint64_t config;
    bool every_cpu;
    uint64_t bp_addr = 0;  // a watchpoint's (PERF_TYPE_BREAKPOINT)
    uint32_t bp_len = 0;
    uint32_t bp_type = 0;
  };
  /// Where x86-64's kernel half of the address space begins (a watchpoint there is the
  /// kernel's, on every CPU).
  static constexpr uint64_t kKernelAddresses = 0xffff800000000000ull;
  void lowerPerfEvent(const ProbeUnit& p, const PerfSampling& sampling);
  /// The query's stash (one per query, made on first use), keyed by (thread, site).
  llvm::GlobalVariable* stashFor(const sema::ResolvedQuery& query, uint32_t args);

  ObjectBuilder& object_;
  ProgramEmitter emitter_;
  std::map<const sema::ResolvedQuery*, llvm::GlobalVariable*> stashes_;
  std::vector<std::unique_ptr<JoinTable>> join_tables_;
  uint64_t next_site_ = 1;
};

/// The `entry(x)` calls of a probe, in the order written.
std::vector<const ast::Call*> entryCalls(const sema::ResolvedProbe& probe);

/// How many arguments an entry keeps for its exit: every parameter any of the probe's
/// functions has (registers and stack), or a uprobe's register arguments.
uint32_t stashArguments(const sema::ResolvedQuery& query);

}  // namespace kq::lower
