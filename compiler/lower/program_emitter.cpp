#include "compiler/lower/program_emitter.h"

#include "compiler/lower/pt_regs.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

#include <cstdlib>

#include <fmt/format.h>

namespace kq::lower {

using plan::Attach;
using plan::FieldKind;
using plan::FieldLayout;

std::unique_ptr<Program> ProgramEmitter::begin(const std::string& name, const std::string& section,
                                               SourceRange at) {
  BpfModule& module = object_.module();
  uint32_t offset = at.file == 0 ? at.begin : 0;
  llvm::Function* fn = module.addPart(name + "_part", offset);
  llvm::LLVMContext& ctx = module.context();
  // entry: stack slots; setup: what every later block needs (the scratch entry); body: code.
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* setup = llvm::BasicBlock::Create(ctx, "setup", fn);
  auto* body = llvm::BasicBlock::Create(ctx, "body", fn);
  auto* bail = llvm::BasicBlock::Create(ctx, "bail", fn);
  // A raw_tp program run on request is not under the kernel's bpf_prog_active guard either.
  bool trampoline = section.rfind("fentry/", 0) == 0 || section.rfind("fexit/", 0) == 0 ||
                    section.rfind("tp_btf/", 0) == 0 || section == "raw_tp" || section.rfind("iter/", 0) == 0;
  auto p = std::make_unique<Program>(object_, fn, setup, bail, trampoline);
  p->section = section;
  p->offset = offset;
  llvm::DebugLoc loc = module.location(fn->getSubprogram(), offset);
  p->b.SetCurrentDebugLocation(loc);
  p->b.SetInsertPoint(bail);
  p->b.CreateRet(p->b.getInt32(0));
  p->b.SetInsertPoint(entry);
  p->b.CreateBr(setup);
  p->b.SetInsertPoint(setup);
  p->b.CreateBr(body);
  p->b.SetInsertPoint(body);
  return p;
}

void ProgramEmitter::finish(Program& program, const std::string& name, const ProgramSite& site) {
  // One way out, the bail-out's: inlined into a site's program, a part whose every path
  // ends there ends its stack slots' lifetimes once, so a path that skipped the last act
  // (a missing entry) is a jump to the next part, not a block of its own with a jump.
  program.b.CreateBr(program.bail);
  if (program.frame.overflowed()) {
    const llvm::DebugLoc& at = program.frame.overflowAt();
    uint32_t offset = at ? object_.offsetOf(at.getLine(), at.getCol()) : 0;
    object_.diags()
        .report(DiagKind::ResourceLimit, SourceRange{object_.mainFile(), offset, offset},
                fmt::format("this query needs {} bytes of scratch memory for its temporaries; a "
                            "BPF program has {}", program.frame.scratchBytes(), Frame::kScratchLimit))
        .note("the temporaries are mostly strings being compared: compare fewer at once, or "
              "split the query");
  }
  plan::PlannedProgram planned = site;  // where and how it attaches, as planned
  planned.function = name;
  planned.stack_bytes = program.frame.stackBytes();
  planned.helpers = object_.module().helpersOf(program.fn);
  planned.queries = {object_.query};
  object_.addPart({std::move(planned), program.section, program.fn, program.offset, program.counts_only});
}

ExprLowering ProgramEmitter::lowering(Program& program, const sema::ExprTable& exprs,
                                      const ArgAccess& args) {
  ExprLowering lower(object_.module(), object_.core(), *object_.checked().types, program.b,
                     program.fn->getSubprogram(), exprs, args, object_.options().string_bytes);
  lower.setFrame(&program.frame);
  lower.setKernelBtf(&object_.btf());
  lower.setLiteralParameters(&object_.literals(), object_.literalsGlobal());
  return lower;
}

llvm::Value* ProgramEmitter::mapLookup(Program& program, llvm::GlobalVariable* map,
                                       llvm::Value* key) {
  return object_.module().callHelper(program.b, Helper::MapLookupElem, program.b.getPtrTy(),
                                     {map, key});
}

llvm::Value* ProgramEmitter::lookupOrAdd(Program& program, llvm::GlobalVariable* map,
                                         llvm::Value* key,
                                         const std::function<llvm::Value*()>& initial,
                                         uint64_t flags, llvm::Value** update_error) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* entry = mapLookup(program, map, key);
  auto* missing = llvm::BasicBlock::Create(b.getContext(), "add_entry", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "have_entry", program.fn);
  llvm::BasicBlock* from = b.GetInsertBlock();
  b.CreateCondBr(b.CreateIsNull(entry), missing, done);
  b.SetInsertPoint(missing);
  llvm::Value* value = initial();
  llvm::Value* err = object_.module().callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                                                 {map, key, value, b.getInt64(flags)});
  llvm::Value* added = mapLookup(program, map, key);
  llvm::BasicBlock* added_end = b.GetInsertBlock();
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* phi = b.CreatePHI(b.getPtrTy(), 2);
  phi->addIncoming(entry, from);
  phi->addIncoming(added, added_end);
  if (update_error) {
    llvm::PHINode* why = b.CreatePHI(b.getInt64Ty(), 2);
    why->addIncoming(b.getInt64(0), from);
    why->addIncoming(err, added_end);
    *update_error = why;
  }
  return phi;
}

llvm::Value* ProgramEmitter::tidKey(Program& program) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(4);
  llvm::Value* pid_tgid = object_.module().callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
  b.CreateStore(b.CreateTrunc(pid_tgid, b.getInt32Ty()), key);
  return key;
}

void ProgramEmitter::processFilter(Program& program) {
  const LowerOptions& options = object_.options();
  if (!options.pid && !object_.tracked) return;
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* pid_tgid = object_.module().callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
  llvm::Value* tgid = b.CreateLShr(pid_tgid, b.getInt64(32));
  llvm::Value* keep;
  if (object_.tracked) {
    llvm::Value* key = program.frame.allocate(4);
    b.CreateStore(b.CreateTrunc(tgid, b.getInt32Ty()), key);
    keep = b.CreateIsNotNull(mapLookup(program, object_.tracked, key));
  } else {
    // The process id is a constant of the object's .rodata, set when it is loaded.
    llvm::Value* pid = b.CreateLoad(b.getInt32Ty(), object_.targetPid(), /*isVolatile=*/true);
    keep = b.CreateICmpEQ(tgid, b.CreateZExt(pid, b.getInt64Ty()));
  }
  auto* next = llvm::BasicBlock::Create(b.getContext(), "traced", program.fn);
  branchOnTo(b, keep, next, program.bail);
  b.SetInsertPoint(next);
}

void ProgramEmitter::syscallFilter(Program& program, ExprLowering& lower, const ProgramSite& site) {
  if (site.syscall_nrs.empty()) return;
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* nr = lower.syscallNumber(site.syscall_exit);
  auto* ours = llvm::BasicBlock::Create(b.getContext(), "this_syscall", program.fn);
  if (site.syscall_nrs.size() == 1) {
    branchOnTo(b, b.CreateICmpEQ(nr, b.getInt64(site.syscall_nrs[0])), ours, program.bail);
  } else {
    // A glob's calls: LLVM makes ranges and a search of the switch, not a compare each.
    llvm::SwitchInst* any = b.CreateSwitch(nr, program.bail, static_cast<unsigned>(site.syscall_nrs.size()));
    for (uint32_t n : site.syscall_nrs) any->addCase(b.getInt64(n), ours);
  }
  b.SetInsertPoint(ours);
  auto* native = llvm::BasicBlock::Create(b.getContext(), "native_syscall", program.fn);
  b.CreateCondBr(lower.compatSyscall(), program.bail, native);
  b.SetInsertPoint(native);
}

void ProgramEmitter::countLost(Program& program, plan::Lost why) {
  // A per-CPU counter of the query's own (plan::ProgramPlan::lost_map), so a plain add;
  // then the program ends.
  llvm::Value* index = program.b.getInt32(object_.query * plan::kLostReasons + static_cast<uint32_t>(why));
  addOne(program, object_.lost, index, "count_lost", program.bail);
}

void ProgramEmitter::addOne(Program& program, llvm::GlobalVariable* counters, llvm::Value* index, const char* name,
                            llvm::BasicBlock* then) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(4);
  b.CreateStore(index, key);
  llvm::Value* counter = mapLookup(program, counters, key);
  auto* add = llvm::BasicBlock::Create(b.getContext(), name, program.fn);
  llvm::BasicBlock* done = then ? then : llvm::BasicBlock::Create(b.getContext(), std::string(name) + "_done", program.fn);
  branchOnTo(b, b.CreateIsNotNull(counter), add, done);
  b.SetInsertPoint(add);
  b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), counter), b.getInt64(1)), counter);
  b.CreateBr(done);
  if (!then) b.SetInsertPoint(done);
}

llvm::Value* ProgramEmitter::stashKey(Program& program, const ProgramSite& site) {
  // (thread id, site): a function's entry and exit on one thread meet; calls of two
  // functions of a glob (one inside the other) do not overwrite each other.
  //
  // A uprobe's also has the stack pointer of the call (at entry; at the return, where it
  // was before the call): a recursive function's calls on one thread are entries of their
  // own, each exit meets its own entry. (Kernel functions rarely recurse; their key stays.)
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(kStashKeyBytes);
  llvm::Value* pid_tgid = object_.module().callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
  b.CreateStore(b.CreateAnd(pid_tgid, b.getInt64(0xffffffff)), key);
  llvm::Value* call = b.getInt64(0);
  if (site.attach == plan::Attach::Uprobe || site.attach == plan::Attach::Uretprobe) {
    const PtRegsLayout& regs = ptRegsLayout(hostArch());
    llvm::Value* sp = b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt8Ty(), program.fn->getArg(0),
                                                               b.getInt64(regs.sp.offset)));
    // x86-64's `ret` pops the return address its call pushed; arm64's call pushes nothing.
    uint64_t pushed = hostArch() == Arch::X86_64 ? 8 : 0;
    call = site.attach == plan::Attach::Uretprobe ? b.CreateSub(sp, b.getInt64(pushed)) : sp;
  }
  b.CreateStore(call, b.CreateGEP(b.getInt8Ty(), key, b.getInt64(16)));
  llvm::Value* where = site.site_is_func_ip
                           ? object_.module().callHelper(b, Helper::GetFuncIp, b.getInt64Ty(), {program.fn->getArg(0)})
                           : b.getInt64(site.site);
  b.CreateStore(where, b.CreateGEP(b.getInt8Ty(), key, b.getInt64(8)));
  return key;
}

void ProgramEmitter::emitStash(const ProbeUnit& p, ProgramSite site) {
  std::string name = object_.programName();
  auto program = begin(name, site.section, p.target.target->range);
  llvm::IRBuilder<>& b = program->b;
  site.args.ctx = program->fn->getArg(0);
  site.args.probe_args = &p.target.args;
  site.args.func = site.func;
  ExprLowering lower = lowering(*program, p.probe.exprs, site.args);
  syscallFilter(*program, lower, site);
  processFilter(*program);
  contextFilter(*this, *program, p);
  uint32_t slots = 1 + p.stash_args + static_cast<uint32_t>(p.entries.size());
  llvm::Value* value = program->frame.allocate(8 * slots);
  b.CreateStore(object_.module().callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {}), value);
  // This function's arguments; the rest of the value (sized for the query's widest
  // function) is zeroed, since the whole value is copied into the map.
  for (uint32_t i = 0; i < p.stash_args; ++i) {
    llvm::Value* v = i < site.arity ? lower.arg(i, object_.checked().types->u64()).v : b.getInt64(0);
    b.CreateStore(v, b.CreateGEP(b.getInt64Ty(), value, b.getInt64(1 + i)));
  }
  // Then each `entry(x)`'s x, evaluated now, at entry.
  for (size_t k = 0; k < p.entries.size(); ++k) {
    llvm::Value* v = lower.value(*p.entries[k]->args[0]).v;
    if (v->getType()->isPointerTy()) v = b.CreatePtrToInt(v, b.getInt64Ty());
    b.CreateStore(v, b.CreateGEP(b.getInt64Ty(), value, b.getInt64(1 + p.stash_args + k)));
  }
  llvm::Value* key = stashKey(*program, site);
  llvm::Value* err = object_.module().callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                                                 {p.stash, key, value, b.getInt64(0)});
  auto* full = llvm::BasicBlock::Create(b.getContext(), "stash_full", program->fn);
  auto* kept = llvm::BasicBlock::Create(b.getContext(), "stashed", program->fn);
  b.CreateCondBr(b.CreateICmpEQ(err, b.getInt64(0)), kept, full);
  b.SetInsertPoint(full);
  countLost(*program, plan::Lost::StashFull);
  b.SetInsertPoint(kept);
  reportProblems(lower);
  finish(*program, name, site);
}

void ProgramEmitter::reportProblems(const ExprLowering& lower) {
  for (const LoweringProblem& problem : lower.problems()) {
    object_.diags().report(DiagKind::Unsupported, problem.range, problem.message);
  }
}

void ProgramEmitter::takeStash(Program& program, const ProbeUnit& p, const ProgramSite& site,
                               ArgAccess& args) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = stashKey(program, site);
  llvm::Value* saved = mapLookup(program, p.stash, key);
  auto* found = llvm::BasicBlock::Create(b.getContext(), "stash_found", program.fn);
  auto* missing = llvm::BasicBlock::Create(b.getContext(), "stash_missing", program.fn);
  b.CreateCondBr(b.CreateIsNotNull(saved), found, missing);
  b.SetInsertPoint(missing);
  countLost(program, plan::Lost::StashMissing);
  b.SetInsertPoint(found);
  // The exit program reads what the entry program saved, then forgets it.
  args.entry_ns = b.CreateLoad(b.getInt64Ty(), saved);
  args.stashed.clear();
  for (uint32_t i = 0; i < p.stash_args; ++i) {
    args.stashed.push_back(b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt64Ty(), saved, b.getInt64(1 + i))));
  }
  for (size_t k = 0; k < p.entries.size(); ++k) {
    args.entry_values[p.entries[k]] = b.CreateLoad(
        b.getInt64Ty(), b.CreateGEP(b.getInt64Ty(), saved, b.getInt64(1 + p.stash_args + k)));
  }
  object_.module().callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.stash, key});
}

void ProgramEmitter::bindArguments(Program& program, const ProbeUnit& p, ProgramSite& site) {
  ArgAccess& args = site.args;
  args.ctx = program.fn->getArg(0);
  args.probe_args = &p.target.args;
  args.session_start = [this] { return object_.sessionStart(); };
  args.func = site.func;
  if (args.probe.empty()) args.probe = p.target.description;
  // The traced function's own frame is on top at its entry, and at fexit too (the
  // trampoline it called returns into it); a kretprobe runs as it returns to its caller. A
  // BPF program traced by fentry is one of the tracing machinery's frames, passed over.
  bool own = site.attach == Attach::Fentry || site.attach == Attach::Fexit ||
             site.attach == Attach::Kprobe || site.attach == Attach::KprobeMulti;
  args.own_frames = own && !std::holds_alternative<ast::BpfProgramTarget>(p.target.target->kind) ? 1 : 0;
}

void ProgramEmitter::emitMain(const ProbeUnit& p, ProgramSite site, bool from_stash) {
  std::string name = object_.programName();
  auto program = begin(name, site.section, p.target.target->range);
  llvm::IRBuilder<>& b = program->b;
  ArgAccess& args = site.args;
  bindArguments(*program, p, site);
  if (!site.syscall_nrs.empty()) {
    ExprLowering filter = lowering(*program, p.probe.exprs, args);
    syscallFilter(*program, filter, site);
  }
  // A join's source keeps events of every process: the thread woken by another, the
  // request completed in an interrupt.
  // An iterator's last call, after its last object, has them null: no event.
  if (site.attach == Attach::Iter) {
    for (const sema::ProbeArg& a : p.target.args) {
      if (!a.type->isPointer()) continue;
      llvm::Value* v = b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt64Ty(), args.ctx, b.getInt64(a.index)));
      auto* present = llvm::BasicBlock::Create(b.getContext(), "iter_object", program->fn);
      b.CreateCondBr(b.CreateICmpEQ(v, b.getInt64(0)), program->bail, present);
      b.SetInsertPoint(present);
      args.read_slots[a.index] = v;
    }
  }
  // `begin`, `end` and iterators run in kq itself, whatever process -p or -c names.
  bool run_once = site.attach == Attach::Begin || site.attach == Attach::End || site.attach == Attach::Iter;
  if (!p.keeps && !run_once) processFilter(*program);
  contextFilter(*this, *program, p);
  if (from_stash) takeStash(*program, p, site, args);
  if (args.packet) packetSetup(*program, p, args, site);
  ExprLowering body = lowering(*program, p.probe.exprs, args);
  std::vector<JoinMatch> matches;
  if (!p.joins.empty()) matches = emitJoinLookups(*this, *program, body, args, p);

  const ast::Expr* where = p.keeps ? p.keeps->join->join->where.get() : p.query.query->clauses.where.get();
  if (where) {
    auto* pass = llvm::BasicBlock::Create(b.getContext(), "kept", program->fn);
    if (p.track) {
      // A packet followed since it was recorded goes on without `where`.
      auto* check = llvm::BasicBlock::Create(b.getContext(), "check_where", program->fn);
      b.CreateCondBr(packetTracked(*program, body, p), pass, check);
      b.SetInsertPoint(check);
    } else if (args.packet && args.packet->netfilter && p.freed) {
      // A chain's drop freed the packet, which was on a journey (it was recorded): its skb
      // cannot be asked any more.
      auto* check = llvm::BasicBlock::Create(b.getContext(), "check_where", program->fn);
      llvm::Value* freed_on = b.CreateLoad(b.getInt64Ty(), body.packetJourneyBeforeFree());
      b.CreateCondBr(b.CreateICmpNE(freed_on, b.getInt64(0)), pass, check);
      b.SetInsertPoint(check);
    }
    llvm::Value* keep = body.condition(*where);
    if (std::getenv("KQ_TEST_VERIFIER_REJECT") && !p.keeps) rejectedOnPurpose(*program, *where);
    branchOnTo(b, keep, pass, program->bail);
    b.SetInsertPoint(pass);
  }
  // From here the part acts (keeps a packet's journey, records, counts, keeps for a join):
  // only while its query runs. What it read and tested before is shared with the parts
  // after it in its site's program (site_programs.cpp), which may test the session's word
  // instead for a part that only counts (ProgramPart::counts_only).
  program->counts_only = p.aggregation && p.aggregation->layout.single && !p.keeps && !p.journeys &&
                         p.joins.empty() && !args.packet;
  auto* running = llvm::BasicBlock::Create(b.getContext(), "query_running", program->fn);
  branchOnTo(b, b.CreateCall(object_.queryRunning(), {b.getInt32(object_.query)}), running, program->bail);
  b.SetInsertPoint(running);
  if (p.journeys) packetJourney(*program, body, p, args);
  b.SetCurrentDebugLocation(object_.module().location(program->fn->getSubprogram(),
                                                      p.target.target->range.begin));
  emitJoinConsume(*this, *program, matches);
  if (p.keeps) {
    emitJoinKeep(*this, *program, body, *p.keeps);
  } else if (p.aggregation) {
    emitAggregateUpdate(*this, *program, body, *p.aggregation);
  } else {
    writeRecord(*program, body, p);
  }
  if (args.packet) packetRecorded(*program, body, p);
  reportProblems(body);
  finish(*program, name, site);
}

void ProgramEmitter::rejectedOnPurpose(Program& program, const ast::Expr& at) {
  // A test hook (KQ_TEST_VERIFIER_REJECT): a read far past the program's context, which
  // every verifier refuses, located at `at`, so tests can see a rejection mapped back to the
  // kq expression (kq's own code never has one to show).
  llvm::IRBuilder<>& b = program.b;
  b.SetCurrentDebugLocation(object_.module().location(program.fn->getSubprogram(), at.range.begin));
  llvm::Value* past = b.CreateGEP(b.getInt8Ty(), program.fn->getArg(0), b.getInt64(1 << 20));
  b.CreateLoad(b.getInt64Ty(), past, /*isVolatile=*/true);
}

void ProgramEmitter::writeRecord(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* record = object_.module().callHelper(
      b, Helper::RingbufReserve, b.getPtrTy(), {object_.events, b.getInt64(p.record_bytes), b.getInt64(0)});
  auto* reserved = llvm::BasicBlock::Create(b.getContext(), "reserved", program.fn);
  auto* full = llvm::BasicBlock::Create(b.getContext(), "full", program.fn);
  branchOnTo(b, b.CreateIsNotNull(record), reserved, full);
  b.SetInsertPoint(full);
  if (p.packet_lost) {
    // Where it was lost, too: the site's counter.
    addOne(program, p.packet_lost, b.CreateTrunc(lower.packetSite(), b.getInt32Ty()), "count_lost_at");
  }
  countLost(program, plan::Lost::RingBufferFull);
  b.SetInsertPoint(reserved);
  writeHeader(program, record, p.id);
  for (const Field& f : p.fields) writeField(program, lower, record, f, p.fields);
  object_.module().callHelper(b, Helper::RingbufSubmit, b.getVoidTy(), {record, submitFlags(program, p.record_bytes)});
}

llvm::Value* ProgramEmitter::submitFlags(Program& program, uint32_t record_bytes) {
  // The reader's pace (plan::ProgramPlan::pace_map): while it sleeps until woken, the kernel's own
  // choice (wake a reader that has read everything); while it reads on a timer, no wakeup,
  // but for the record that fills the ring past the mark, which wakes it at once. A wakeup
  // costs the traced thread an interrupt of its own CPU: on a timer, it pays none.
  constexpr uint64_t kNoWakeup = 1, kForceWakeup = 2, kAvailData = 0;  // BPF_RB_*
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  llvm::Value* key = program.frame.allocate(4);
  b.CreateStore(b.getInt32(0), key);
  llvm::Value* pace = mapLookup(program, object_.ringPace(), key);
  llvm::BasicBlock* from = b.GetInsertBlock();
  auto* read = llvm::BasicBlock::Create(b.getContext(), "pace", program.fn);
  auto* timed = llvm::BasicBlock::Create(b.getContext(), "reader_on_a_timer", program.fn);
  auto* submit = llvm::BasicBlock::Create(b.getContext(), "submit", program.fn);
  b.CreateCondBr(b.CreateIsNull(pace), submit, read);
  b.SetInsertPoint(read);
  llvm::Value* wake_at = b.CreateLoad(b.getInt32Ty(), pace);
  b.CreateCondBr(b.CreateICmpEQ(wake_at, b.getInt32(0)), submit, timed);
  b.SetInsertPoint(timed);
  llvm::Value* avail = module.callHelper(b, Helper::RingbufQuery, b.getInt64Ty(),
                                         {object_.events, b.getInt64(kAvailData)});
  // This record (with its 8-byte header, 8-aligned) took the ring past the mark.
  uint64_t bytes = (uint64_t{record_bytes} + 8 + 7) / 8 * 8;
  llvm::Value* mark = b.CreateZExt(wake_at, b.getInt64Ty());
  llvm::Value* crossed = b.CreateAnd(b.CreateICmpUGE(avail, mark),
                                     b.CreateICmpULT(avail, b.CreateAdd(mark, b.getInt64(bytes))));
  llvm::Value* on_timer = b.CreateSelect(crossed, b.getInt64(kForceWakeup), b.getInt64(kNoWakeup));
  b.CreateBr(submit);
  b.SetInsertPoint(submit);
  llvm::PHINode* flags = b.CreatePHI(b.getInt64Ty(), 3);
  flags->addIncoming(b.getInt64(0), from);
  flags->addIncoming(b.getInt64(0), read);
  flags->addIncoming(on_timer, timed);
  return flags;
}

void ProgramEmitter::writeHeader(Program& program, llvm::Value* record, uint32_t probe_id) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  auto at = [&](uint32_t offset) { return b.CreateGEP(b.getInt8Ty(), record, b.getInt64(offset)); };
  b.CreateStore(module.callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {}), at(0));
  b.CreateStore(b.getInt32(probe_id), at(8));
  b.CreateStore(b.CreateTrunc(module.callHelper(b, Helper::GetSmpProcessorId, b.getInt64Ty(), {}),
                              b.getInt32Ty()),
                at(12));
  llvm::Value* pid_tgid = module.callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
  b.CreateStore(b.CreateTrunc(b.CreateLShr(pid_tgid, b.getInt64(32)), b.getInt32Ty()), at(16));
  b.CreateStore(b.CreateTrunc(pid_tgid, b.getInt32Ty()), at(20));
  module.callHelper(b, Helper::GetCurrentComm, b.getInt64Ty(), {at(24), b.getInt64(16)});
}

void ProgramEmitter::writeField(Program& program, ExprLowering& lower, llvm::Value* record,
                                const Field& f, const std::vector<Field>& all) {
  if (!f.within) return writeFieldBytes(program, lower, record, f, all);
  lower.enterBody(*f.within);
  writeFieldBytes(program, lower, record, f, all);
  lower.leaveBody();
}

void ProgramEmitter::writeFieldBytes(Program& program, ExprLowering& lower, llvm::Value* record,
                                     const Field& f, const std::vector<Field>& all) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  llvm::Value* dst = b.CreateGEP(b.getInt8Ty(), record, b.getInt64(f.layout.offset));
  switch (f.packet) {
    case Field::Packet::None: break;
    case Field::Packet::Skb: return (void)b.CreateStore(lower.packetSkb(), dst);
    case Field::Packet::Site: return (void)b.CreateStore(lower.packetSite(), dst);
    case Field::Packet::Reason: return (void)b.CreateStore(lower.packetReason(), dst);
    case Field::Packet::Journey: return (void)b.CreateStore(lower.packetJourney(), dst);
    case Field::Packet::Verdict: return (void)b.CreateStore(lower.packetVerdict(), dst);
    case Field::Packet::Return:
      return (void)b.CreateStore(b.getInt64(lower.packetAtReturn() ? 1 : 0), dst);
  }
  if (f.probe_name) return (void)b.CreateStore(lower.probeKey(), dst);
  if (f.layout.hidden && !f.expr) return;  // a record's address: written with the record
  if (f.expr && lower.info(*f.expr).ref == sema::Ref::Joined) {
    // As the join kept it: the field is laid out as the join's (record_layout's fieldFor).
    const ArgAccess::Kept* k = lower.kept(lower.info(*f.expr));
    if (!k) return;
    uint32_t n = std::min(f.layout.size, k->bytes);
    if (n <= 256) {
      b.CreateMemCpy(dst, llvm::MaybeAlign(1), k->addr, llvm::MaybeAlign(1), n);
    } else {
      lower.probeRead(dst, n, k->addr, false, false);
    }
    return;
  }
  if (f.func_ip) {
    b.CreateStore(module.callHelper(b, Helper::GetFuncIp, b.getInt64Ty(), {program.fn->getArg(0)}), dst);
    return;
  }
  switch (f.layout.kind) {
    case FieldKind::Format: return;  // no bytes: its arguments are fields
    case FieldKind::File: return;    // no bytes: the file is read when the event prints
    case FieldKind::StringList:
      return lower.storeStringList(*ast::as<ast::Call>(*f.expr).args[0], dst, f.layout.size);
    case FieldKind::Buffer:
      return lower.storeBytes(*ast::as<ast::Call>(*f.expr).args[0], dst, f.layout.size);
    case FieldKind::SizedBuffer: {
      const auto& call = ast::as<ast::Call>(*f.expr);
      return lower.storeSizedBytes(*call.args[0], *call.args[1], dst, f.layout.size);
    }
    case FieldKind::Table:  // the key; the name is found when printing
      b.CreateStore(lower.lookupKey(*f.expr).v, dst);
      return;
    case FieldKind::String:
      if (f.expr) return lower.storeString(*f.expr, dst, f.layout.size);
      return lower.storeArgString(f.arg, f.type, dst, f.layout.size);
    case FieldKind::Caller:
      // The traced function's own frames to pass over, then the stack they are on.
      b.CreateStore(b.getInt64(lower.ownFrames()), dst);
      module.callHelper(b, Helper::GetStack, b.getInt64Ty(),
                        {program.fn->getArg(0), b.CreateGEP(b.getInt8Ty(), dst, b.getInt64(8)),
                         b.getInt64(f.layout.size - 8), b.getInt64(0)});
      return;
    case FieldKind::KernelStack:
    case FieldKind::UserStack:
      module.callHelper(b, Helper::GetStack, b.getInt64Ty(),
                        {program.fn->getArg(0), dst, b.getInt64(f.layout.size),
                         b.getInt64(f.layout.kind == FieldKind::UserStack ? 256 : 0)});
      return;
    case FieldKind::Ipv6: {
      // The 16 bytes of the address (an array or struct in6_addr) the operand names.
      const auto& call = ast::as<ast::Call>(*f.expr);
      lower.storeRecord(*call.args[0], dst, 16);
      return;
    }
    case FieldKind::Ipv4: {
      // A number holds the address; an array of 4 bytes (`__u8 saddr[4]`) is where it is.
      const auto& call = ast::as<ast::Call>(*f.expr);
      if (lower.info(*call.args[0]).type->isInteger()) break;
      lower.storeRecord(*call.args[0], dst, 4);
      return;
    }
    case FieldKind::IpAddress:
      return lower.storeIpAddress(ast::as<ast::Call>(*f.expr), dst);
    case FieldKind::Record: {
      llvm::Value* address;
      if (f.expr) {
        address = lower.storeRecord(*f.expr, dst, f.layout.size);
      } else {
        Val v = lower.arg(f.arg, f.type);
        lower.probeRead(dst, f.layout.size, v.v, v.user, false);
        address = v.v;
      }
      if (f.layout.address_field >= 0 && static_cast<size_t>(f.layout.address_field) < all.size()) {
        const FieldLayout& addr = all[f.layout.address_field].layout;
        b.CreateStore(address, b.CreateGEP(b.getInt8Ty(), record, b.getInt64(addr.offset)));
      }
      return;
    }
    default: break;
  }
  Val v = f.expr ? lower.value(*f.expr) : lower.arg(f.arg, f.type);
  b.CreateStore(v.v, dst);
}

}  // namespace kq::lower

namespace kq::lower {
namespace {

/// The index of `name` among the members of the struct `type` (not through anonymous
/// members), or -1.
int memberIndex(const btf::BtfType& type, std::string_view name) {
  const ::btf_type* t = type.get();
  if (!t || !btf_is_struct(t)) return -1;
  const ::btf_member* m = btf_members(t);
  for (uint16_t i = 0; i < btf_vlen(t); ++i) {
    if (type.file->btf->name(m[i].name_off) == name) return i;
  }
  return -1;
}

}  // namespace

void ProgramEmitter::emitForkFollower() {
  auto task = object_.btf().findStruct("task_struct");
  if (!task) return;
  int tgid = memberIndex(*task, "tgid");
  if (tgid < 0) return;
  const CoreTypes::Record& rec = object_.core().record(*task);
  auto [ir_index, di_index] = rec.index[tgid];
  if (ir_index < 0) return;
  ProgramSite s;
  s.attach = Attach::TpBtf;
  s.target = "sched_process_fork";
  s.group = object_.newGroup("following forks");
  // Every query follows the command's children: no query's end detaches it.
  s.whole_session = true;
  std::string name = object_.programName();
  auto program = begin(name, "tp_btf/sched_process_fork", SourceRange{});
  llvm::IRBuilder<>& b = program->b;
  llvm::Function* fn = program->fn;
  // sched_process_fork(parent, child): follow the child if the parent is followed.
  auto tgidOf = [&](uint32_t arg) {
    llvm::Value* slot = b.CreateGEP(b.getInt64Ty(), fn->getArg(0), b.getInt64(arg));
    llvm::Value* task_ptr = b.CreateIntToPtr(b.CreateLoad(b.getInt64Ty(), slot), b.getPtrTy());
    llvm::Value* field = b.CreatePreserveStructAccessIndex(rec.ir, task_ptr, ir_index, di_index, rec.di);
    llvm::Value* key = program->frame.allocate(4);
    b.CreateStore(b.CreateLoad(b.getInt32Ty(), field), key);
    return key;
  };
  BpfModule& module = object_.module();
  llvm::Value* found = mapLookup(*program, object_.tracked, tgidOf(0));
  auto* follow = llvm::BasicBlock::Create(b.getContext(), "follow", fn);
  b.CreateCondBr(b.CreateIsNotNull(found), follow, program->bail);
  b.SetInsertPoint(follow);
  llvm::Value* child = tgidOf(1);
  llvm::Value* one = program->frame.allocate(1);
  b.CreateStore(b.getInt8(1), one);
  module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {object_.tracked, child, one, b.getInt64(0)});
  finish(*program, name, s);
}

}  // namespace kq::lower
