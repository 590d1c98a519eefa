// The programs each kind of probe gets: fentry and kprobe for kernel functions (with
// kprobe.multi for globs), tp_btf or tracepoint for tracepoints and syscalls, uprobes, and the
// entry and exit programs that track a call context; at exit, an entry program that stashes
// the arguments. Part of ProgramBuilder (program_builder.h).
#include <bpf/btf.h>

#include <map>

#include <fmt/format.h>

#include "compiler/lower/program_builder.h"
#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {

using runtime::Attach;

void ProgramBuilder::lowerContext(const Probe& p, const btf::Function& fn, uint32_t level) {
  struct Method {
    const char* enter;
    const char* leave;
    Attach enter_attach;
    Attach leave_attach;
  };
  const Method methods[] = {{"fentry/", "fexit/", Attach::Fentry, Attach::Fexit},
                            {"kprobe/", "kretprobe/", Attach::Kprobe, Attach::Kretprobe}};
  for (uint32_t m = 0; m < 2; ++m) {
    for (bool entering : {true, false}) {
      std::string name = programName();
      auto e = begin(name, std::string(entering ? methods[m].enter : methods[m].leave) + fn.name,
                     *p.probe.chain[level].target);
      sema::ExprTable none;
      ArgAccess args;
      ExprLowering lower(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), none,
                         args, options_.string_bytes);
      llvm::IRBuilder<>& b = e->b;
      llvm::Value* key = tidKey(*e, lower);
      llvm::Value* depths = mapLookup(*e, p.context, key);
      if (entering && level == 0) {
        // The outermost function creates the thread's entry on first use.
        auto* create = llvm::BasicBlock::Create(module_.context(), "create", e->fn);
        auto* have = llvm::BasicBlock::Create(module_.context(), "have", e->fn);
        llvm::BasicBlock* from = b.GetInsertBlock();
        b.CreateCondBr(b.CreateIsNull(depths), create, have);
        b.SetInsertPoint(create);
        llvm::Value* zeros = lower.slot(4 * kMaxContextDepth);
        for (uint32_t i = 0; i < kMaxContextDepth; ++i) {
          b.CreateStore(b.getInt32(0), b.CreateGEP(b.getInt32Ty(), zeros, b.getInt64(i)));
        }
        module_.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.context, key, zeros, b.getInt64(0)});
        llvm::Value* created = mapLookup(*e, p.context, key);
        llvm::BasicBlock* create_end = b.GetInsertBlock();
        b.CreateBr(have);
        b.SetInsertPoint(have);
        llvm::PHINode* phi = b.CreatePHI(b.getPtrTy(), 2);
        phi->addIncoming(depths, from);
        phi->addIncoming(created, create_end);
        depths = phi;
      }
      auto* found = llvm::BasicBlock::Create(module_.context(), "found", e->fn);
      b.CreateCondBr(b.CreateIsNotNull(depths), found, e->bail);
      b.SetInsertPoint(found);
      llvm::Value* slot = b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(level));
      llvm::Value* depth = b.CreateLoad(b.getInt32Ty(), slot);
      if (entering) {
        for (uint32_t outer = 0; outer < level; ++outer) {
          llvm::Value* d = b.CreateLoad(b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(outer)));
          auto* inside = llvm::BasicBlock::Create(module_.context(), "inside", e->fn);
          b.CreateCondBr(b.CreateICmpNE(d, b.getInt32(0)), inside, e->bail);
          b.SetInsertPoint(inside);
        }
        b.CreateStore(b.CreateAdd(depth, b.getInt32(1)), slot);
      } else {
        auto* positive = llvm::BasicBlock::Create(module_.context(), "positive", e->fn);
        b.CreateCondBr(b.CreateICmpNE(depth, b.getInt32(0)), positive, e->bail);
        b.SetInsertPoint(positive);
        b.CreateStore(b.CreateSub(depth, b.getInt32(1)), slot);
      }
      b.CreateRet(b.getInt32(0));
      plan(name, entering ? methods[m].enter_attach : methods[m].leave_attach, fn.name, *p.group, m);
    }
  }
}

void ProgramBuilder::contextFilter(Emitter& e, ExprLowering& lower, const Probe& p) {
  if (!p.context) return;
  llvm::IRBuilder<>& b = e.b;
  llvm::Value* depths = mapLookup(e, p.context, tidKey(e, lower));
  auto* found = llvm::BasicBlock::Create(module_.context(), "in_context", e.fn);
  b.CreateCondBr(b.CreateIsNotNull(depths), found, e.bail);
  b.SetInsertPoint(found);
  llvm::Value* innermost = b.CreateLoad(
      b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(p.context_levels - 1)));
  auto* inside = llvm::BasicBlock::Create(module_.context(), "inside", e.fn);
  b.CreateCondBr(b.CreateICmpNE(innermost, b.getInt32(0)), inside, e.bail);
  b.SetInsertPoint(inside);
}

uint32_t ProgramBuilder::newGroup(const std::string& name) {
  plan_.group_names.push_back(name);
  return static_cast<uint32_t>(plan_.group_names.size() - 1);
}

std::string ProgramBuilder::programName() { return fmt::format("kq_prog_{}", program_count_++); }

void ProgramBuilder::plan(const std::string& function, Attach attach, const std::string& target,
                          uint32_t group, uint32_t method, const std::string& binary) {
  runtime::PlannedProgram planned;
  planned.function = function;
  planned.attach = attach;
  planned.target = target;
  planned.binary = binary;
  planned.group = group;
  planned.method = method;
  planned.query = current_query_;
  plan_.programs.push_back(std::move(planned));
}

llvm::GlobalVariable* ProgramBuilder::stashMap() {
  std::string name = fmt::format("stash_{}", stash_count_++);
  return module_.addMap({name, MapType::Hash, 65536, 4, kStashBytes});
}

bool ProgramBuilder::usesFunc(const sema::ResolvedProbe& probe) {
  for (const auto& [expr, info] : probe.exprs) {
    if (info.ref == sema::Ref::Builtin && sema::builtinVariables()[info.index].name == "func") {
      return true;
    }
  }
  return false;
}

void ProgramBuilder::lowerKprobeMulti(const Probe& p) {
  std::vector<std::string> symbols;
  for (const btf::Function& fn : p.target.functions) symbols.push_back(fn.name);
  ArgAccess regs{ArgAccess::Kind::PtRegs};
  size_t first = plan_.programs.size();
  if (!p.probe.at_exit) {
    emitMain(p, programName(), "kprobe.multi", Attach::KprobeMulti, "", *p.group, 1, regs, "");
  } else {
    llvm::GlobalVariable* stash = stashMap();
    emitStash(p, programName(), "kprobe.multi", Attach::KprobeMulti, "", *p.group, 1, regs, stash,
              kStashArgs);
    ArgAccess exit{ArgAccess::Kind::Stash};
    exit.ret = ArgAccess::Ret::Regs;
    emitMain(p, programName(), "kretprobe.multi", Attach::KretprobeMulti, "", *p.group, 1, exit,
             "", stash);
  }
  for (size_t i = first; i < plan_.programs.size(); ++i) {
    plan_.programs[i].symbols = symbols;
    plan_.programs[i].target = p.target.description;
  }
}

void ProgramBuilder::lowerFunction(const Probe& p, const btf::Function& fn, bool multi) {
  uint32_t group = p.group ? *p.group : newGroup(fn.name);
  uint32_t kprobe_method = multi ? 2 : 1;
  uint32_t nargs = static_cast<uint32_t>(fn.params.size());
  ArgAccess ctx_args{ArgAccess::Kind::CtxArray};
  ArgAccess regs{ArgAccess::Kind::PtRegs};
  if (!p.probe.at_exit) {
    emitMain(p, programName(), "fentry/" + fn.name, Attach::Fentry, fn.name, group, 0, ctx_args,
             fn.name);
    emitMain(p, programName(), "kprobe/" + fn.name, Attach::Kprobe, fn.name, group,
             kprobe_method, regs, fn.name);
    return;
  }
  // At exit: fexit sees arguments and return value; the entry time comes from fentry.
  llvm::GlobalVariable* fentry_stash = stashMap();
  emitStash(p, programName(), "fentry/" + fn.name, Attach::Fentry, fn.name, group, 0, ctx_args,
            fentry_stash, 0);
  ArgAccess fexit = ctx_args;
  fexit.ret = ArgAccess::Ret::CtxSlot;
  fexit.return_slot = nargs;
  emitMain(p, programName(), "fexit/" + fn.name, Attach::Fexit, fn.name, group, 0, fexit,
           fn.name, fentry_stash);
  // kretprobe sees only the return value: the arguments were saved at entry.
  llvm::GlobalVariable* kprobe_stash = stashMap();
  emitStash(p, programName(), "kprobe/" + fn.name, Attach::Kprobe, fn.name, group,
            kprobe_method, regs, kprobe_stash, nargs);
  ArgAccess kret{ArgAccess::Kind::Stash};
  kret.ret = ArgAccess::Ret::Regs;
  emitMain(p, programName(), "kretprobe/" + fn.name, Attach::Kretprobe, fn.name, group,
           kprobe_method, kret, fn.name, kprobe_stash);
}

void ProgramBuilder::lowerTracepoint(const Probe& p) {
  const sema::ResolvedTarget& t = p.target;
  uint32_t group = newGroup(t.description);
  if (!t.functions.empty()) {
    // A BTF handler exists: tp_btf, with typed arguments.
    ArgAccess args{ArgAccess::Kind::CtxArray};
    emitMain(p, programName(), "tp_btf/" + t.event, Attach::TpBtf, t.event, group, 0, args, "");
    return;
  }
  if (!t.events.empty()) {
    lowerEventGlob(p);
    return;
  }
  if (!t.format) {
    unsupported(t.target->range, "a tracepoint glob");
    return;
  }
  ArgAccess args{ArgAccess::Kind::TracepointRecord};
  args.format = &*t.format;
  // Pointers in syscall records point into the calling process.
  args.user_args = t.category == "syscalls";
  args.skip_syscall_nr = t.category == "syscalls";
  emitMain(p, programName(), "tracepoint/" + t.category + "/" + t.event, Attach::Tracepoint,
           t.category + "/" + t.event, group, 0, args, "");
}

void ProgramBuilder::lowerSyscall(const Probe& p) {
  const sema::ResolvedTarget& t = p.target;
  if (!t.events.empty() && !p.probe.at_exit) {
    lowerEventGlob(p);
    return;
  }
  if (t.event.empty() || !t.format) {
    unsupported(t.target->range, "a syscall glob with `return`");
    return;
  }
  std::string name = t.event.substr(std::string("sys_enter_").size());
  uint32_t group = newGroup("syscall " + name);
  ArgAccess enter{ArgAccess::Kind::TracepointRecord};
  enter.format = &*t.format;
  enter.skip_syscall_nr = true;
  enter.user_args = true;
  std::string enter_target = "syscalls/sys_enter_" + name;
  if (!p.probe.at_exit) {
    emitMain(p, programName(), "tracepoint/" + enter_target, Attach::Tracepoint, enter_target,
             group, 0, enter, "");
    return;
  }
  llvm::GlobalVariable* stash = stashMap();
  emitStash(p, programName(), "tracepoint/" + enter_target, Attach::Tracepoint, enter_target,
            group, 0, enter, stash, static_cast<uint32_t>(t.args.size()));
  ArgAccess exit{ArgAccess::Kind::Stash};
  exit.user_args = true;
  exit.ret = ArgAccess::Ret::SyscallExit;
  std::string exit_target = "syscalls/sys_exit_" + name;
  emitMain(p, programName(), "tracepoint/" + exit_target, Attach::Tracepoint, exit_target, group,
           0, exit, "", stash);
}

void ProgramBuilder::lowerUprobe(const Probe& p, const ast::UprobeTarget& u,
                                 const std::string& symbol) {
  uint32_t group = newGroup(u.binary + ":" + symbol);
  ArgAccess regs{ArgAccess::Kind::PtRegs};
  regs.user_args = true;
  if (!p.probe.at_exit) {
    emitMain(p, programName(), "uprobe", Attach::Uprobe, symbol, group, 0, regs, symbol, nullptr,
             u.binary);
    return;
  }
  llvm::GlobalVariable* stash = stashMap();
  emitStash(p, programName(), "uprobe", Attach::Uprobe, symbol, group, 0, regs, stash, kStashArgs,
            u.binary);
  ArgAccess exit{ArgAccess::Kind::Stash};
  exit.user_args = true;
  exit.ret = ArgAccess::Ret::Regs;
  emitMain(p, programName(), "uretprobe", Attach::Uretprobe, symbol, group, 0, exit, symbol,
           stash, u.binary);
}

}  // namespace kq::lower

namespace kq::lower {

void ProgramBuilder::lowerEventGlob(const Probe& p) {
  // One classic tracepoint program per match, each with its own layout so that every line
  // names the event it came from; the glob's builtins are all its queries can use.
  uint32_t group = newGroup(p.target.description);
  for (const std::string& event : p.target.events) {
    std::string category = event.substr(0, event.find(':'));
    std::string name = event.substr(event.find(':') + 1);
    runtime::ProbeLayout layout = plan_.layout.probes[p.id];
    layout.name = "tracepoint:" + event;
    if (category == "syscalls") layout.name = "syscall:" + name.substr(std::string("sys_enter_").size());
    Probe one = p;
    one.id = static_cast<uint32_t>(plan_.layout.probes.size());
    plan_.layout.probes.push_back(layout);
    ArgAccess args{ArgAccess::Kind::None};
    args.probe = layout.name;
    emitMain(one, programName(), "tracepoint/" + category + "/" + name, Attach::Tracepoint,
             category + "/" + name, group, 0, args, "");
  }
}

void ProgramBuilder::lowerPerfEvent(const Probe& p, uint64_t period_ns, uint64_t frequency_hz) {
  uint32_t group = newGroup(p.target.description);
  ArgAccess none;
  size_t first = plan_.programs.size();
  emitMain(p, programName(), "perf_event", Attach::PerfEvent, "", group, 0, none, "");
  plan_.programs[first].target = p.target.description;
  plan_.programs[first].period_ns = period_ns;
  plan_.programs[first].frequency_hz = frequency_hz;
}

bool ProgramBuilder::usesFuncIn(const sema::ResolvedProbe& probe, const ast::Expr& root) {
  // Any `func` inside `root`'s source range.
  for (const auto& [expr, info] : probe.exprs) {
    if (info.ref == sema::Ref::Builtin && sema::builtinVariables()[info.index].name == "func" &&
        expr->range.file == root.range.file && expr->range.begin >= root.range.begin &&
        expr->range.end <= root.range.end) {
      return true;
    }
  }
  return false;
}

void ProgramBuilder::lowerPacket(const Probe& p) {
  uint32_t group = newGroup(p.target.description);
  // Functions by the position of their `struct sk_buff *`: a program reads it from there.
  std::map<uint32_t, std::vector<std::string>> by_position;
  for (size_t i = 0; i < p.target.functions.size(); ++i) {
    by_position[p.target.packet_positions[i]].push_back(p.target.functions[i].name);
  }
  for (uint32_t method = 0; method < 2; ++method) {
    for (const auto& [position, symbols] : by_position) {
      ArgAccess regs{ArgAccess::Kind::PtRegs};
      regs.arg_positions = {position};
      regs.func_ip = true;
      size_t first = plan_.programs.size();
      if (method == 0) {
        emitMain(p, programName(), "kprobe.multi", Attach::KprobeMulti, "", group, 0, regs, "");
      } else {
        emitMain(p, programName(), "kprobe", Attach::Kprobe, "", group, 1, regs, "");
      }
      plan_.programs[first].symbols = symbols;
      plan_.programs[first].target = fmt::format("{} functions", symbols.size());
    }
  }
}

}  // namespace kq::lower
