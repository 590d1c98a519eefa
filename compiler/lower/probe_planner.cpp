#include "compiler/lower/probe_planner.h"

#include "compiler/sema/builtins/builtins.h"
#include "compiler/lower/pt_regs.h"
#include "host/syscall_numbers.h"

#include <linux/bpf.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

namespace kq::lower {
namespace {

using plan::Attach;

/// Registers a uprobe's arguments are read from (x86-64: di si dx cx r8 r9).
constexpr uint32_t kUprobeArgs = 6;
/// Entries a stash holds: calls in flight at once, across threads. Allocated on use.
constexpr uint32_t kStashEntries = 65536;
/// `track`: packets followed at once (an LRU map: the oldest make room).
constexpr uint32_t kTrackedPackets = 65536;
/// `packet` with netfilter's verdicts: skbs freed lately whose journeys are remembered.
constexpr uint32_t kFreedPackets = 4096;

ProgramSite site(std::string section, Attach attach, std::string target, uint32_t group,
                 uint32_t method, ArgAccess args) {
  ProgramSite s;
  s.section = std::move(section);
  s.attach = attach;
  s.target = std::move(target);
  s.group = group;
  s.method = method;
  s.args = std::move(args);
  return s;
}

uint32_t arityOf(const sema::ResolvedProbe& probe) {
  const sema::ResolvedTarget& t = probe.chain.back();
  uint32_t n = 0;
  for (const btf::Function& fn : t.functions) n = std::max<uint32_t>(n, fn.params.size());
  if (std::holds_alternative<ast::SyscallTarget>(t.target->kind)) n = t.args.size();
  if (std::holds_alternative<ast::UprobeTarget>(t.target->kind)) n = kUprobeArgs;
  return n;
}

/// `task_struct.thread_info` and its `status` (4 bytes), which raw_syscalls programs read to
/// tell a 32-bit call; empty when the kernel's BTF lacks them.
std::vector<btf::MemberSteps> compatStatus(const btf::Btf& btf) {
  std::optional<btf::BtfType> task = btf.findStruct("task_struct");
  std::optional<btf::MemberSteps> info = task ? btf::findMemberSteps(*task, "thread_info") : std::nullopt;
  std::optional<btf::MemberSteps> status = info ? btf::findMemberSteps(info->type, "status") : std::nullopt;
  if (!status || status->type.size() != 4) return {};
  return {std::move(*info), std::move(*status)};
}

}  // namespace

std::vector<const ast::Call*> entryCalls(const sema::ResolvedProbe& probe) {
  std::vector<const ast::Call*> calls;
  for (const auto& [expr, info] : probe.exprs) {
    if (info.function && info.function->id == sema::BuiltinFn::Entry) {
      calls.push_back(&ast::as<ast::Call>(*expr));
    }
  }
  // In the order written (the table is unordered): the stash layout must not vary.
  std::sort(calls.begin(), calls.end(), [](const ast::Call* a, const ast::Call* b) {
    return std::tie(a->range.file, a->range.begin) < std::tie(b->range.file, b->range.begin);
  });
  return calls;
}

std::vector<const sema::ResolvedProbe*> probesOf(const sema::ResolvedQuery& query) {
  std::vector<const sema::ResolvedProbe*> probes;
  for (const sema::ResolvedProbe& probe : query.probes) probes.push_back(&probe);
  for (const sema::ResolvedJoin& join : query.joins) probes.push_back(&join.probe);
  return probes;
}

uint32_t stashArguments(const sema::ResolvedQuery& query) {
  uint32_t n = 0;
  for (const sema::ResolvedProbe* probe : probesOf(query)) {
    if (probe->at_exit && !probe->chain.empty()) n = std::max(n, arityOf(*probe));
  }
  return n;
}

llvm::GlobalVariable* ProbePlanner::stashFor(const sema::ResolvedQuery& query, uint32_t args) {
  llvm::GlobalVariable*& stash = stashes_[&query];
  if (!stash) {
    // Entry time, the arguments, then the `entry(x)` values of the probe with the most.
    size_t entries = 0;
    for (const sema::ResolvedProbe* probe : probesOf(query)) entries = std::max(entries, entryCalls(*probe).size());
    stash = object_.addMap({fmt::format("stash_{}", object_.query), MapType::Hash, kStashEntries,
                            kStashKeyBytes, static_cast<uint32_t>(8 * (1 + args + entries)), kMapNoPrealloc});
  }
  return stash;
}

void ProbePlanner::lowerQuery(const sema::ResolvedQuery& query, uint32_t query_number,
                              const Aggregation* aggregation) {
  object_.query = query_number;
  // Each join: its map, and its source's programs, which keep what the query reads.
  std::vector<const JoinTable*> joins;
  LayoutOptions options{object_.options().string_bytes, object_.options().dump_bytes, false,
                        &query.joins};
  for (const sema::ResolvedJoin& join : query.joins) {
    // Another source of a join: its events go into that join's map, laid out as there.
    JoinTable table = join.feeds ? feederTable(*joins[*join.feeds], join)
                                 : makeJoinTable(object_, join, query_number, options);
    join_tables_.push_back(std::make_unique<JoinTable>(std::move(table)));
    joins.push_back(join_tables_.back().get());
  }
  for (size_t j = 0; j < query.joins.size(); ++j) {
    if (!query.joins[j].probe.chain.empty()) {
      lowerProbe(query, query.joins[j].probe, query_number, nullptr, joins[j], {});
    }
  }
  for (const sema::ResolvedProbe& probe : query.probes) {
    if (!probe.chain.empty()) lowerProbe(query, probe, query_number, aggregation, nullptr, joins);
  }
}

void ProbePlanner::lowerProbe(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                              uint32_t query_number, const Aggregation* aggregation,
                              const JoinTable* keeps, std::vector<const JoinTable*> joins) {
  const sema::ResolvedTarget& target = probe.chain.back();
  const ast::Target& ast_target = *target.target;
  plan::ProgramPlan& plan = object_.plan();
  bool packet = std::holds_alternative<ast::PacketTarget>(ast_target.kind);
  LayoutOptions layout_options{object_.options().string_bytes, object_.options().dump_bytes,
                               target.functions.size() > 1 || packet, &query.joins};
  if (packet) layout_options.packet_sites = &target.packet_sites;
  ProbeUnit p{query, probe, target,
              keeps ? std::vector<Field>{} : recordFields(query, probe, layout_options)};
  p.id = static_cast<uint32_t>(plan.layout.probes.size());
  p.record_bytes = recordBytes(p.fields);
  p.aggregation = aggregation;
  p.keeps = keeps;
  p.joins = std::move(joins);
  plan::ProbeLayout layout;
  layout.name = target.description;
  layout.query = query_number;
  layout.writes_records = aggregation == nullptr && keeps == nullptr;
  layout.size = p.record_bytes;
  for (const Field& f : p.fields) {
    if (f.probe_name) layout.name_field = static_cast<int32_t>(layout.fields.size());
    layout.fields.push_back(f.layout);
  }
  if (packet) addPacketState(p, layout, query_number);
  plan.layout.probes.push_back(std::move(layout));
  if (probe.at_exit) {
    p.stash_args = stashArguments(query);
    p.stash = stashFor(query, p.stash_args);
    p.entries = entryCalls(probe);
  }
  addCallContext(p);

  if (std::holds_alternative<ast::FunctionTarget>(ast_target.kind)) {
    lowerFunctions(p);
  } else if (std::holds_alternative<ast::TracepointTarget>(ast_target.kind)) {
    lowerTracepoint(p);
  } else if (std::holds_alternative<ast::SyscallTarget>(ast_target.kind)) {
    lowerSyscall(p);
  } else if (std::holds_alternative<ast::PacketTarget>(ast_target.kind)) {
    lowerPacket(p);
  } else if (const auto* i = std::get_if<ast::IntervalTarget>(&ast_target.kind)) {
    lowerPerfEvent(p, {i->period_ns, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, false});
  } else if (const auto* pr = std::get_if<ast::ProfileTarget>(&ast_target.kind)) {
    lowerPerfEvent(p, {0, pr->frequency_hz, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true});
  } else if (std::holds_alternative<ast::WatchpointTarget>(ast_target.kind)) {
    // Every access: a period of 1; a kernel address on every CPU, a user one in the traced
    // process (the loader's).
    const sema::ResolvedTarget::Watch& w = *target.watch;
    PerfSampling sampling{1, 0, PERF_TYPE_BREAKPOINT, 0, w.address >= kKernelAddresses};
    sampling.bp_addr = w.address;
    sampling.bp_len = w.length;
    sampling.bp_type = w.type;
    lowerPerfEvent(p, sampling);
  } else if (std::holds_alternative<ast::PerfEventTarget>(ast_target.kind)) {
    lowerPerfEvent(p, {target.perf_period, target.perf_frequency_hz, target.perf_event->type,
                       target.perf_event->config, true});
  } else if (const auto* u = std::get_if<ast::UprobeTarget>(&ast_target.kind)) {
    for (const std::string& symbol : target.symbols) lowerUprobe(p, *u, symbol);
  } else if (const auto* u = std::get_if<ast::UsdtTarget>(&ast_target.kind)) {
    lowerUsdt(p, *u);
  } else if (std::holds_alternative<ast::BpfProgramTarget>(ast_target.kind)) {
    lowerBpfPrograms(p);
  } else if (const auto* it = std::get_if<ast::IterTarget>(&ast_target.kind)) {
    // The iterator's context is its arguments' array, as a trampoline's; the session reads
    // the iterator once, which runs the program for each object.
    uint32_t group = object_.newGroup(p.target.description);
    emitter_.emitMain(p, site("iter/" + it->name, Attach::Iter, it->name, group, 0,
                              ArgAccess{ArgAccess::Kind::CtxArray}));
  } else if (const auto* s = std::get_if<ast::SessionTarget>(&ast_target.kind)) {
    // A raw_tp program attached to nothing: the session runs it once (BPF_PROG_TEST_RUN),
    // in kq's own process, so no process filter applies.
    uint32_t group = object_.newGroup(p.target.description);
    emitter_.emitMain(p, site("raw_tp", s->at_end ? Attach::End : Attach::Begin, p.target.description, group, 0,
                              ArgAccess{}));
  }
}

void ProbePlanner::addCallContext(ProbeUnit& p) {
  const std::vector<sema::ResolvedTarget>& chain = p.probe.chain;
  if (chain.size() < 2) return;
  // `a -> b -> c`: a per-thread count of how deep each outer function is entered; the
  // programs of the whole chain switch attach methods together.
  std::string name;
  for (const sema::ResolvedTarget& t : chain) name += (name.empty() ? "" : " -> ") + t.description;
  p.group = object_.newGroup(name);
  p.context = object_.addMap({fmt::format("context_{}", p.id), MapType::Hash, kStashEntries, 4,
                              4 * sema::kMaxCallContext, kMapNoPrealloc});
  p.context_levels = static_cast<uint32_t>(chain.size() - 1);
  for (uint32_t level = 0; level < p.context_levels; ++level) {
    for (const btf::Function& fn : chain[level].functions) emitContextPrograms(emitter_, p, fn, level);
  }
}

void ProbePlanner::lowerFunctions(ProbeUnit& p) {
  const sema::ResolvedTarget& t = p.target;
  bool glob = t.functions.size() > 1;
  // kprobe.multi serves every function with one program, so `func` there is only known
  // as an address: fine to print, not to compare in `where`.
  bool multi = glob && !p.context && !p.probe.func.in_where;
  uint32_t group = p.group ? *p.group : object_.newGroup(t.description);
  if (t.kprobe_offset) {
    // Inside the function: a kprobe there, its only method.
    const btf::Function& fn = t.functions.front();
    ProgramSite s = site("kprobe/" + fn.name, Attach::Kprobe, fn.name, group, 0, ArgAccess{ArgAccess::Kind::PtRegs});
    s.func = fn.name;
    s.kprobe_offset = t.kprobe_offset;
    emitter_.emitMain(p, s);
    return;
  }
  for (const btf::Function& fn : t.functions) lowerFunction(p, fn, group, multi ? 2 : 1);
  if (multi) lowerKprobeMulti(p, group);
}

void ProbePlanner::lowerTrampoline(const ProbeUnit& p, const SiteAt& at, uint32_t nargs, uint64_t where) {
  ArgAccess ctx_args{ArgAccess::Kind::CtxArray};
  if (!p.probe.at_exit) {
    emitter_.emitMain(p, at("fentry", Attach::Fentry, ctx_args));
    return;
  }
  // At exit: fexit sees arguments and return value; the entry time comes from fentry.
  ProgramSite enter = at("fentry", Attach::Fentry, ctx_args);
  enter.site = where;
  enter.arity = 0;
  emitter_.emitStash(p, enter);
  ArgAccess fexit = ctx_args;
  fexit.ret = ArgAccess::Ret::CtxSlot;
  fexit.return_slot = nargs;
  ProgramSite leave = at("fexit", Attach::Fexit, fexit);
  leave.site = where;
  emitter_.emitMain(p, leave, /*from_stash=*/true);
}

void ProbePlanner::lowerFunction(const ProbeUnit& p, const btf::Function& fn, uint32_t group,
                                 uint32_t kprobe_method) {
  uint32_t nargs = static_cast<uint32_t>(fn.params.size());
  ArgAccess regs{ArgAccess::Kind::PtRegs};
  auto named = [&](ProgramSite s) {
    s.func = fn.name;
    return s;
  };
  auto at = [&](const char* kind, Attach attach, ArgAccess args) {
    return named(site(std::string(kind) + "/" + fn.name, attach, fn.name, group, 0, std::move(args)));
  };
  if (!p.probe.at_exit) {
    lowerTrampoline(p, at, nargs, 0);
    emitter_.emitMain(p, named(site("kprobe/" + fn.name, Attach::Kprobe, fn.name, group, kprobe_method, regs)));
    return;
  }
  uint64_t where = next_site_++;
  lowerTrampoline(p, at, nargs, where);
  // kretprobe sees only the return value: the arguments were saved at entry.
  ProgramSite kenter = named(site("kprobe/" + fn.name, Attach::Kprobe, fn.name, group, kprobe_method, regs));
  kenter.site = where;
  kenter.arity = nargs;
  emitter_.emitStash(p, kenter);
  ArgAccess kret{ArgAccess::Kind::Stash};
  kret.ret = ArgAccess::Ret::Regs;
  ProgramSite kleave = named(site("kretprobe/" + fn.name, Attach::Kretprobe, fn.name, group, kprobe_method, kret));
  kleave.site = where;
  emitter_.emitMain(p, kleave, /*from_stash=*/true);
}

void ProbePlanner::lowerKprobeMulti(const ProbeUnit& p, uint32_t group) {
  std::vector<std::string> symbols;
  for (const btf::Function& fn : p.target.functions) symbols.push_back(fn.name);
  ArgAccess regs{ArgAccess::Kind::PtRegs};
  ProgramSite enter = site("kprobe.multi", Attach::KprobeMulti, p.target.description, group, 1, regs);
  enter.symbols = symbols;
  if (!p.probe.at_exit) {
    emitter_.emitMain(p, enter);
    return;
  }
  enter.site_is_func_ip = true;
  enter.arity = p.stash_args;
  emitter_.emitStash(p, enter);
  ArgAccess exit{ArgAccess::Kind::Stash};
  exit.ret = ArgAccess::Ret::Regs;
  ProgramSite leave = site("kretprobe.multi", Attach::KretprobeMulti, p.target.description, group, 1, exit);
  leave.symbols = symbols;
  leave.site_is_func_ip = true;
  emitter_.emitMain(p, leave, /*from_stash=*/true);
}

void ProbePlanner::lowerBpfPrograms(const ProbeUnit& p) {
  // A trampoline on each program's function, and nothing to fall back to: kprobes cannot go
  // into BPF programs.
  uint32_t group = p.group ? *p.group : object_.newGroup(p.target.description);
  object_.noteGroup(group, "a BPF program: fentry on its function, through a BPF trampoline (fexit "
                           "for `return`); kprobes cannot go into a BPF program, so there is no "
                           "other method");
  for (const host::BpfProgram& prog : p.target.bpf_programs) {
    auto at = [&](const char* kind, Attach attach, ArgAccess args) {
      ProgramSite s = site(std::string(kind) + "/" + prog.function, attach, prog.function, group, 0, std::move(args));
      s.func = prog.displayName();
      s.attach_program = prog.id;
      return s;
    };
    lowerTrampoline(p, at, static_cast<uint32_t>(prog.params.size()), p.probe.at_exit ? next_site_++ : 0);
  }
}

void ProbePlanner::lowerTracepoint(const ProbeUnit& p) {
  const sema::ResolvedTarget& t = p.target;
  if (t.syscall_names) return lowerSyscallGlob(p);  // `tracepoint:syscalls:sys_enter_*`
  if (!t.events.empty()) return lowerEventGlob(p);
  if (t.category == "syscalls" && t.format && lowerSyscallTracepoint(p)) return;
  uint32_t group = object_.newGroup(t.description);
  if (!t.functions.empty()) {
    // A BTF handler exists: tp_btf, with typed arguments.
    object_.noteGroup(group, "the event has a BTF handler: tp_btf, with typed arguments, which "
                             "detaches at once (a classic tracepoint's perf event waits for an "
                             "RCU grace period as it goes)");
    ArgAccess args{ArgAccess::Kind::CtxArray};
    emitter_.emitMain(p, site("tp_btf/" + t.event, Attach::TpBtf, t.event, group, 0, args));
    return;
  }
  if (!t.format) return;  // sema found neither a BTF handler nor a format
  std::string why =
      t.category == "syscalls"
          ? "the syscalls tracepoint, as named (a call's entry, and `syscall:NAME`'s exit, are "
            "read from raw_syscalls where kq can)"
      : t.record_because.empty()
          ? "no BTF handler for this event: a classic tracepoint, reading the fields of its record"
          : fmt::format("the query reads `{}`, a field of the classic record that the BTF "
                        "handler does not take: a classic tracepoint, reading the fields of its "
                        "record",
                        t.record_because);
  object_.noteGroup(group, why);
  ArgAccess args{ArgAccess::Kind::TracepointRecord};
  args.format = &*t.format;
  // Pointers in syscall records point into the calling process.
  args.user_args = t.category == "syscalls";
  args.skip_syscall_nr = t.category == "syscalls";
  std::string target = t.category + "/" + t.event;
  emitter_.emitMain(p, site("tracepoint/" + target, Attach::Tracepoint, target, group, 0, args));
}

void ProbePlanner::lowerSyscall(const ProbeUnit& p) {
  const sema::ResolvedTarget& t = p.target;
  if (t.syscall_names) return lowerSyscallGlob(p);
  if (!t.events.empty() && !p.probe.at_exit) return lowerEventGlob(p);
  if (t.event.empty() || !t.format) return;  // sema refuses a syscall glob at exit (needsExit)
  std::string name = t.event.substr(std::string("sys_enter_").size());
  uint32_t group = object_.newGroup("syscall " + name);
  // raw_syscalls where kq knows the call's number and how to tell a 32-bit compat call
  // (x86-64): measured in bench/README.md, it detaches at once and costs less per call.
  std::optional<uint32_t> nr = host::syscallNumber(name);
  std::vector<btf::MemberSteps> compat = compatStatus(object_.btf());
  if (nr && hostArch() == Arch::X86_64 && !compat.empty()) {
    object_.noteGroup(group, fmt::format(
        "raw_syscalls filtered to system call {}: detached at once and cheaper per call than "
        "syscalls/sys_enter_{} (method 1, for kernels without tp_btf), whose perf event waits "
        "for an RCU grace period as it goes; each other system call pays a compare",
        *nr, name));
    lowerRawSyscall(p, {*nr}, group, compat);
    lowerClassicSyscall(p, name, group, 1);
    return;
  }
  object_.noteGroup(group, !nr ? fmt::format("the syscalls tracepoint (kq knows no system call "
                                             "number named `{}` for raw_syscalls)", name)
                   : hostArch() != Arch::X86_64 ? "the syscalls tracepoint (raw_syscalls are used on x86-64 only)"
                                                : "the syscalls tracepoint (raw_syscalls need the kernel's "
                                                  "task_struct.thread_info.status to tell a 32-bit call, and "
                                                  "this kernel's BTF lacks it)");
  lowerClassicSyscall(p, name, group, 0);
}

void ProbePlanner::lowerRawSyscall(const ProbeUnit& p, const std::vector<uint32_t>& nrs, uint32_t group,
                                   const std::vector<btf::MemberSteps>& compat) {
  ArgAccess enter{ArgAccess::Kind::SyscallRegs};
  enter.user_args = true;
  enter.compat_status = compat;
  ProgramSite in = site("tp_btf/sys_enter", Attach::TpBtf, "sys_enter", group, 0, enter);
  in.syscall_nrs = nrs;
  if (!p.probe.at_exit) {
    emitter_.emitMain(p, in);
    return;
  }
  in.site = next_site_++;
  in.arity = static_cast<uint32_t>(p.target.args.size());
  emitter_.emitStash(p, in);
  ArgAccess exit{ArgAccess::Kind::Stash};
  exit.user_args = true;
  exit.compat_status = compat;
  exit.ret = ArgAccess::Ret::CtxSlot;  // sys_exit(struct pt_regs *regs, long ret)
  exit.return_slot = 1;
  ProgramSite out = site("tp_btf/sys_exit", Attach::TpBtf, "sys_exit", group, 0, exit);
  out.syscall_nrs = nrs;
  out.syscall_exit = true;
  out.site = in.site;
  emitter_.emitMain(p, out, /*from_stash=*/true);
}

bool ProbePlanner::lowerSyscallTracepoint(const ProbeUnit& p) {
  // A syscall's tracepoint by name, served as `syscall:NAME` is, by raw_syscalls filtered to
  // its number: an entry's record fields (the call's arguments, in order) read from its
  // registers, an exit's `ret` from sys_exit's second argument; the tracepoint named is the
  // fallback (method 1).
  const sema::ResolvedTarget& t = p.target;
  bool enter = t.event.rfind("sys_enter_", 0) == 0;
  bool exit = t.event.rfind("sys_exit_", 0) == 0 && t.args.size() == 1 && t.args[0].name == "ret";
  if (!enter && !exit) return false;
  std::string name = t.event.substr(enter ? std::string("sys_enter_").size() : std::string("sys_exit_").size());
  std::optional<uint32_t> nr = host::syscallNumber(name);
  std::vector<btf::MemberSteps> compat = compatStatus(object_.btf());
  if (!nr || hostArch() != Arch::X86_64 || compat.empty()) return false;
  uint32_t group = object_.newGroup(t.description);
  object_.noteGroup(group, fmt::format(
      "raw_syscalls filtered to system call {}, the record's fields read from {}: detached at "
      "once, where syscalls/{} (method 1, for kernels without tp_btf) is a perf event that waits "
      "for an RCU grace period as it goes",
      *nr, enter ? "its registers" : "sys_exit's return value", t.event));
  if (enter) {
    lowerRawSyscall(p, {*nr}, group, compat);
    lowerClassicSyscall(p, name, group, 1);
    return true;
  }
  ArgAccess raw{ArgAccess::Kind::CtxArray};  // sys_exit(struct pt_regs *regs, long ret)
  raw.arg_positions = {1};
  raw.compat_status = compat;
  raw.user_args = true;
  ProgramSite out = site("tp_btf/sys_exit", Attach::TpBtf, "sys_exit", group, 0, raw);
  out.syscall_nrs = {*nr};
  out.syscall_exit = true;
  emitter_.emitMain(p, out);
  ArgAccess classic{ArgAccess::Kind::TracepointRecord};
  classic.format = &*t.format;
  classic.skip_syscall_nr = true;
  classic.user_args = true;
  std::string target = "syscalls/" + t.event;
  emitter_.emitMain(p, site("tracepoint/" + target, Attach::Tracepoint, target, group, 1, classic));
  return true;
}

void ProbePlanner::lowerSyscallGlob(const ProbeUnit& p) {
  // One layout for all of the glob's calls, `probe` the call's number named by the glob's
  // table (a hidden field names each record's probe): so one raw_syscalls program can
  // serve them all, detached at once, with a tracepoint each as the fallback.
  const sema::ResolvedTarget& t = p.target;
  uint32_t group = object_.newGroup(t.description);
  std::vector<uint32_t> nrs;
  for (const auto& [nr, name] : t.syscall_names->names) nrs.push_back(static_cast<uint32_t>(nr));
  std::vector<btf::MemberSteps> compat = compatStatus(object_.btf());
  uint32_t method = 0;
  if (hostArch() == Arch::X86_64 && !compat.empty()) {
    object_.noteGroup(group, fmt::format(
        "raw_syscalls filtered to the glob's {} system calls: one program, detached at once, where "
        "a tracepoint each (method 1, for kernels without tp_btf) makes {} perf events, each "
        "waiting for an RCU grace period as it goes",
        nrs.size(), nrs.size()));
    lowerRawSyscall(p, nrs, group, compat);
    method = 1;
  } else {
    object_.noteGroup(group, hostArch() != Arch::X86_64
                                 ? "a syscalls tracepoint each (raw_syscalls are used on x86-64 only)"
                                 : "a syscalls tracepoint each (raw_syscalls need the kernel's "
                                   "task_struct.thread_info.status to tell a 32-bit call, and this "
                                   "kernel's BTF lacks it)");
  }
  // Each call's own tracepoint as the fallback: its name is the event's (`syscall:openat`,
  // `tracepoint:syscalls:sys_enter_openat`).
  for (const auto& [nr, name] : t.syscall_names->names) {
    size_t entry = name.find("sys_enter_");
    std::string call = entry == std::string::npos ? name.substr(name.find(':') + 1)
                                                  : name.substr(entry + std::string("sys_enter_").size());
    lowerClassicSyscall(p, call, group, method, static_cast<uint32_t>(nr));
  }
}

void ProbePlanner::lowerClassicSyscall(const ProbeUnit& p, const std::string& name,
                                       uint32_t group, uint32_t method,
                                       std::optional<uint32_t> glob_nr) {
  const sema::ResolvedTarget& t = p.target;
  // A glob's call has no arguments in scope: only its number, for `probe`.
  ArgAccess enter{glob_nr ? ArgAccess::Kind::None : ArgAccess::Kind::TracepointRecord};
  if (!glob_nr) enter.format = &*t.format;
  enter.skip_syscall_nr = true;
  enter.user_args = true;
  enter.probe_key = glob_nr;
  std::string enter_target = "syscalls/sys_enter_" + name;
  ProgramSite in = site("tracepoint/" + enter_target, Attach::Tracepoint, enter_target, group, method, enter);
  if (!p.probe.at_exit) {
    emitter_.emitMain(p, in);
    return;
  }
  in.site = next_site_++;
  in.arity = static_cast<uint32_t>(t.args.size());
  emitter_.emitStash(p, in);
  ArgAccess exit{ArgAccess::Kind::Stash};
  exit.user_args = true;
  exit.ret = ArgAccess::Ret::SyscallExit;
  exit.syscall_ret_offset = t.exit_ret_offset;
  exit.probe_key = glob_nr;
  std::string exit_target = "syscalls/sys_exit_" + name;
  ProgramSite out = site("tracepoint/" + exit_target, Attach::Tracepoint, exit_target, group, method, exit);
  out.site = in.site;
  emitter_.emitMain(p, out, /*from_stash=*/true);
}

void ProbePlanner::lowerEventGlob(const ProbeUnit& p) {
  // One classic tracepoint program per match, each with its own layout so that every line
  // names the event it came from; its queries read the glob's builtins and the fields
  // every match has alike (sema's format of them).
  plan::ProgramPlan& plan = object_.plan();
  uint32_t group = object_.newGroup(p.target.description);
  for (size_t i = 0; i < p.target.events.size(); ++i) {
    const std::string& event = p.target.events[i];
    std::string category = event.substr(0, event.find(':'));
    std::string name = event.substr(event.find(':') + 1);
    plan::ProbeLayout layout = plan.layout.probes[p.id];
    // Named as written: `tracepoint:syscalls:sys_exit_mmap`, or `syscall:mmap` for `syscall:*`.
    layout.name = "tracepoint:" + event;
    if (category == "syscalls" && std::holds_alternative<ast::SyscallTarget>(p.target.target->kind)) {
      for (std::string_view prefix : {"sys_enter_", "sys_exit_"}) {
        if (name.rfind(prefix, 0) == 0) layout.name = "syscall:" + name.substr(prefix.size());
      }
    }
    ProbeUnit one = p;
    one.id = static_cast<uint32_t>(plan.layout.probes.size());
    plan.layout.probes.push_back(layout);
    ArgAccess args{p.target.format ? ArgAccess::Kind::TracepointRecord : ArgAccess::Kind::None};
    if (p.target.format) args.format = &*p.target.format;
    args.probe = layout.name;
    if (p.target.event_names) args.probe_key = static_cast<uint32_t>(i);
    std::string target = category + "/" + name;
    emitter_.emitMain(one, site("tracepoint/" + target, Attach::Tracepoint, target, group, 0, args));
  }
}

void ProbePlanner::lowerUprobe(const ProbeUnit& p, const ast::UprobeTarget& u,
                               const std::string& symbol) {
  uint32_t group = object_.newGroup(p.target.binary + ":" + symbol);
  ArgAccess regs{ArgAccess::Kind::PtRegs};
  regs.user_args = true;
  ProgramSite in = site("uprobe", Attach::Uprobe, symbol, group, 0, regs);
  in.binary = p.target.binary;
  in.func = symbol;
  if (!p.probe.at_exit) {
    emitter_.emitMain(p, in);
    return;
  }
  in.site = next_site_++;
  in.arity = kUprobeArgs;
  emitter_.emitStash(p, in);
  ArgAccess exit{ArgAccess::Kind::Stash};
  exit.user_args = true;
  exit.ret = ArgAccess::Ret::Regs;
  ProgramSite out = site("uretprobe", Attach::Uretprobe, symbol, group, 0, exit);
  out.binary = p.target.binary;
  out.func = symbol;
  out.site = in.site;
  emitter_.emitMain(p, out, /*from_stash=*/true);
}

// A uprobe program per site (each reads its arguments where its own note says), all of a
// probe's sites (and a glob's probes) loaded and attached together.
void ProbePlanner::lowerUsdt(const ProbeUnit& p, const ast::UsdtTarget& u) {
  uint32_t group = object_.newGroup(p.target.description);
  for (const host::UsdtProbe& probe : p.target.usdt_probes) {
    for (const host::UsdtSite& s : probe.sites) {
      ArgAccess args{ArgAccess::Kind::Usdt};
      args.user_args = true;
      args.usdt = &s;
      args.probe = fmt::format("usdt:{}:{}:{}", p.target.binary, probe.provider, probe.name);
      ProgramSite in = site("uprobe", Attach::Uprobe, probe.provider + ":" + probe.name, group, 0, args);
      in.binary = p.target.binary;
      in.uprobe_offset = s.file_offset;
      in.ref_ctr_offset = s.semaphore_offset;
      emitter_.emitMain(p, in);
    }
  }
}

void ProbePlanner::addPacketState(ProbeUnit& p, plan::ProbeLayout& layout, uint32_t query_number) {
  const auto& packet = std::get<ast::PacketTarget>(p.target.target->kind);
  plan::PacketLayout& view = layout.packet.emplace();
  view.graph = packet.graph;
  for (const sema::PacketSite& site : p.target.packet_sites) {
    view.sites.push_back(site.name);
    view.modules.push_back(site.module);
    view.frees.push_back(site.frees);
  }
  std::optional<btf::BtfType> reason = object_.btf().findEnum("skb_drop_reason");
  for (size_t i = 0; i < p.fields.size(); ++i) {
    plan::FieldLayout& f = layout.fields[i];
    switch (p.fields[i].packet) {
      case Field::Packet::None: break;
      case Field::Packet::Skb: view.skb_field = static_cast<int32_t>(i); break;
      case Field::Packet::Site: if (f.hidden) view.site_field = static_cast<int32_t>(i); break;
      case Field::Packet::Return: view.return_field = static_cast<int32_t>(i); break;
      case Field::Packet::Journey: view.journey_field = static_cast<int32_t>(i); break;
      case Field::Packet::Verdict: view.verdict_field = static_cast<int32_t>(i); break;
      case Field::Packet::Reason:
        view.reason_field = static_cast<int32_t>(i);
        if (reason) {
          f.btf_id = reason->id;
          f.type_name = "enum skb_drop_reason";
        } else {
          f.kind = plan::FieldKind::Unsigned;
        }
        break;
    }
  }
  p.track = p.query.query->clauses.track.has_value();
  if (layout.writes_records) {
    view.lost_map = fmt::format("packet_lost_{}", query_number);
    p.packet_lost = object_.addMap({view.lost_map, MapType::PercpuArray, static_cast<uint32_t>(view.sites.size()), 4, 8});
  }
  if (layout.writes_records || p.track) {
    // (journey, data head) by skb, and (journey, an skb holding it) by data head.
    p.journeys = object_.addMap({fmt::format("journeys_{}", query_number), MapType::LruHash, kTrackedPackets, 8, 16, 0});
    if (p.target.packet_identity) {
      p.heads = object_.addMap({fmt::format("journey_heads_{}", query_number), MapType::LruHash, kTrackedPackets, 8, 16, 0});
    }
    if (std::any_of(p.target.packet_sites.begin(), p.target.packet_sites.end(),
                    [](const sema::PacketSite& s) { return s.netfilter.has_value(); })) {
      // Its entries are read within the call that freed the skb: a few per CPU would do.
      p.freed = object_.addMap({fmt::format("journeys_freed_{}", query_number), MapType::LruHash, kFreedPackets, 8, 8, 0});
    }
  }
  if (packet.graph) {
    // (thread, site, depth): a function calls itself for another skb (loopback's reply goes
    // through __dev_queue_xmit inside the first call's): each call's return finds its own.
    p.graph = object_.addMap({fmt::format("graph_{}", query_number), MapType::Hash, kStashEntries, 24, 16, kMapNoPrealloc});
    p.graph_depth = object_.addMap({fmt::format("graph_depth_{}", query_number), MapType::LruHash, kStashEntries, 16, 8, 0});
  }
}

void ProbePlanner::lowerPacket(const ProbeUnit& p) {
  const sema::ResolvedTarget& t = p.target;
  bool graph = std::get<ast::PacketTarget>(t.target->kind).graph;
  uint32_t group = object_.newGroup(t.description);
  object_.plan().packet_groups.push_back(group);
  object_.plan().packet_program_groups.push_back(-1);
  object_.plan().packet_netfilter_groups.push_back(-1);
  // One program serves every function: its attach cookie says which, and where the
  // function takes its skb (and a drop's reason), so LLVM compiles it once.
  std::vector<std::string> symbols;
  std::vector<uint64_t> cookies;
  std::vector<std::pair<uint32_t, const sema::PacketSite*>> tracepoints;
  for (uint32_t i = 0; i < t.packet_sites.size(); ++i) {
    const sema::PacketSite& site = t.packet_sites[i];
    if (site.program || site.netfilter) continue;  // lowerPacketPrograms, lowerNetfilterVerdicts
    if (!site.event.empty()) {
      tracepoints.emplace_back(i, &site);
      continue;
    }
    symbols.push_back(site.name);
    cookies.push_back(i | uint64_t{site.skb} << kPacketCookieSkbShift |
                      uint64_t{site.reason ? *site.reason + 1 : 0} << kPacketCookieReasonShift |
                      (site.frees ? kPacketCookieFrees : 0) | (site.releases ? kPacketCookieReleases : 0) |
                      (site.unseen ? kPacketCookieUnseen : 0) |
                      uint64_t{site.copy_of ? *site.copy_of + 1 : 0} << kPacketCookieCopyShift);
  }
  lowerPacketPrograms(p);
  lowerNetfilterVerdicts(p);
  uint32_t method = 0;
  if (!symbols.empty()) {
    struct Kind {
      const char* enter_section;
      Attach enter;
      const char* leave_section;
      Attach leave;
    };
    for (Kind k : {Kind{"kprobe.multi", Attach::KprobeMulti, "kretprobe.multi", Attach::KretprobeMulti},
                   Kind{"kprobe", Attach::Kprobe, "kretprobe", Attach::Kretprobe}}) {
      ArgAccess regs{ArgAccess::Kind::PtRegs};
      regs.packet.emplace();
      ProgramSite enter = site(k.enter_section, k.enter, "", group, method, regs);
      enter.symbols = symbols;
      enter.cookies = cookies;
      enter.target = fmt::format("{} functions", symbols.size());
      emitter_.emitMain(p, enter);
      if (graph) {
        ProgramSite leave = site(k.leave_section, k.leave, "", group, method, regs);
        leave.symbols = symbols;
        leave.cookies = cookies;
        leave.target = enter.target;
        emitter_.emitPacketReturn(p, leave);
      }
      ++method;
    }
  }
  if (graph || tracepoints.empty() || !object_.options().packet_tracepoints) {
    object_.noteGroup(group, "packet mode attaches kprobe.multi, then a kprobe per function, with "
                             "one program for all of them (fentry would need one each)");
    return;
  }
  // Where the kernel has neither: the tracepoints that carry an skb, each a tp_btf program.
  object_.noteGroup(group, fmt::format(
      "packet mode attaches kprobe.multi, then a kprobe per function, with one program for all "
      "of them (fentry would need one each); without kprobes, the {} tracepoints that carry "
      "an skb", tracepoints.size()));
  for (const auto& [index, packet_site] : tracepoints) {
    ArgAccess args{ArgAccess::Kind::CtxArray};
    args.arg_positions = {packet_site->skb};
    args.packet.emplace();
    args.packet->site = index;
    args.packet->reason_slot = packet_site->reason;
    args.packet->frees = packet_site->frees;
    args.packet->releases = packet_site->releases;
    args.packet->unseen = packet_site->unseen;
    args.func = packet_site->name;
    ProgramSite s = site("tp_btf/" + packet_site->event, Attach::TpBtf, packet_site->event, group,
                         method, args);
    emitter_.emitMain(p, s);
  }
}

void ProbePlanner::lowerPacketPrograms(const ProbeUnit& p) {
  const sema::ResolvedTarget& t = p.target;
  std::vector<uint32_t> programs;
  for (uint32_t i = 0; i < t.packet_sites.size(); ++i) {
    const sema::PacketSite& site = t.packet_sites[i];
    // An XDP program's skb is found by its data's head, which only journeys keep.
    bool xdp = site.program && site.program->type == BPF_PROG_TYPE_XDP;
    if (site.program && (!xdp || p.heads)) programs.push_back(i);
  }
  if (programs.empty()) return;
  // Their own group, which may attach nothing: the query goes on without them, and says so.
  uint32_t group = object_.newGroup(fmt::format("the XDP and TC programs of {}", t.description));
  object_.plan().optional_groups.push_back(group);
  object_.plan().packet_program_groups.back() = static_cast<int32_t>(group);
  object_.noteGroup(group, "an XDP or TC program: fexit on its function, through a BPF trampoline (its "
                           "verdict is its return); kprobes cannot go into a BPF program, so where the "
                           "kernel refuses fexit, packet mode goes on without them");
  for (uint32_t index : programs) {
    const sema::PacketSite& s = t.packet_sites[index];
    const host::BpfProgram& prog = *s.program;
    ArgAccess args{ArgAccess::Kind::CtxArray};
    args.ret = ArgAccess::Ret::CtxSlot;
    args.return_slot = static_cast<uint32_t>(prog.params.size());
    args.packet.emplace();
    args.packet->site = index;
    args.packet->program_type = prog.type;
    args.packet->xdp = prog.type == BPF_PROG_TYPE_XDP;
    args.func = s.name;
    ProgramSite leave = site("fexit/" + prog.function, Attach::Fexit, prog.function, group, 0, args);
    leave.func = s.name;
    leave.attach_program = prog.id;
    emitter_.emitMain(p, leave);
  }
}

void ProbePlanner::lowerNetfilterVerdicts(const ProbeUnit& p) {
  const sema::ResolvedTarget& t = p.target;
  for (uint32_t index = 0; index < t.packet_sites.size(); ++index) {
    const sema::PacketSite& s = t.packet_sites[index];
    if (!s.netfilter) continue;
    uint32_t group = object_.newGroup("netfilter's verdicts (nft_do_chain's return)");
    object_.plan().optional_groups.push_back(group);
    object_.plan().packet_netfilter_groups.back() = static_cast<int32_t>(group);
    object_.noteGroup(group, "nft_do_chain's return, the verdict of a base chain's rules: fexit, through a "
                             "BPF trampoline, which reads the arguments at the return (a kretprobe cannot); "
                             "where the kernel refuses fexit, packet mode goes on without them");
    ArgAccess args{ArgAccess::Kind::CtxArray};
    args.ret = ArgAccess::Ret::CtxSlot;
    args.return_slot = s.netfilter->params;
    args.packet.emplace();
    args.packet->site = index;
    args.packet->netfilter = &*s.netfilter;
    args.func = s.name;
    ProgramSite leave = site("fexit/" + s.name, Attach::Fexit, s.name, group, 0, args);
    leave.func = s.name;
    emitter_.emitMain(p, leave);
  }
}

void ProbePlanner::lowerPerfEvent(const ProbeUnit& p, const PerfSampling& sampling) {
  uint32_t group = object_.newGroup(p.target.description);
  ProgramSite s = site("perf_event", Attach::PerfEvent, p.target.description, group, 0, ArgAccess{});
  s.period_ns = sampling.period;
  s.frequency_hz = sampling.frequency_hz;
  s.perf_type = sampling.type;
  s.perf_config = sampling.config;
  s.every_cpu = sampling.every_cpu;
  s.bp_addr = sampling.bp_addr;
  s.bp_len = sampling.bp_len;
  s.bp_type = sampling.bp_type;
  emitter_.emitMain(p, s);
}

}  // namespace kq::lower
