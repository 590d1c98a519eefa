// The code every program is made of: its entry and bail-out blocks, the process and thread
// filters, the entry program that stashes arguments, the main program that evaluates `where`
// and writes a record to the ring buffer, and the fork follower of `-c`. Part of
// ProgramBuilder (program_builder.h).
#include "compiler/lower/program_builder.h"

namespace kq::lower {

using runtime::Attach;
using runtime::FieldKind;
using runtime::FieldLayout;

std::unique_ptr<ProgramBuilder::Emitter> ProgramBuilder::begin(const std::string& name,
                                                               const std::string& section,
                                                               const ast::Target& target) {
  llvm::Function* fn = module_.addProgram(name, section,
                                          target.range.file == 0 ? target.range.begin : 0);
  auto e = std::make_unique<Emitter>(fn, module_.context());
  auto* entry = llvm::BasicBlock::Create(module_.context(), "entry", fn);
  e->bail = llvm::BasicBlock::Create(module_.context(), "bail", fn);
  e->b.SetInsertPoint(e->bail);
  e->b.SetCurrentDebugLocation(module_.location(fn->getSubprogram(), target.range.begin));
  e->b.CreateRet(e->b.getInt32(0));
  e->b.SetInsertPoint(entry);
  e->b.SetCurrentDebugLocation(module_.location(fn->getSubprogram(), target.range.begin));
  return e;
}

llvm::Value* ProgramBuilder::mapLookup(Emitter& e, llvm::GlobalVariable* map,
                                       llvm::Value* key_slot) {
  return module_.callHelper(e.b, Helper::MapLookupElem, e.b.getPtrTy(), {map, key_slot});
}

llvm::Value* ProgramBuilder::tidKey(Emitter& e, ExprLowering& lower) {
  llvm::Value* key = lower.slot(4);
  llvm::Value* pid_tgid = module_.callHelper(e.b, Helper::GetCurrentPidTgid, e.b.getInt64Ty(), {});
  e.b.CreateStore(e.b.CreateTrunc(pid_tgid, e.b.getInt32Ty()), key);
  return key;
}

void ProgramBuilder::processFilter(Emitter& e, ExprLowering& lower) {
  if (!options_.pid && !tracked_) return;
  llvm::Value* pid_tgid = module_.callHelper(e.b, Helper::GetCurrentPidTgid, e.b.getInt64Ty(), {});
  llvm::Value* tgid = e.b.CreateLShr(pid_tgid, e.b.getInt64(32));
  llvm::Value* keep;
  if (tracked_) {
    llvm::Value* key = lower.slot(4);
    e.b.CreateStore(e.b.CreateTrunc(tgid, e.b.getInt32Ty()), key);
    keep = e.b.CreateIsNotNull(mapLookup(e, tracked_, key));
  } else {
    keep = e.b.CreateICmpEQ(tgid, e.b.getInt64(options_.pid));
  }
  auto* next = llvm::BasicBlock::Create(module_.context(), "traced", e.fn);
  e.b.CreateCondBr(keep, next, e.bail);
  e.b.SetInsertPoint(next);
}

void ProgramBuilder::emitStash(const Probe& p, const std::string& name,
                               const std::string& section, Attach attach,
                               const std::string& target, uint32_t group, uint32_t method,
                               ArgAccess args, llvm::GlobalVariable* stash, uint32_t nargs,
                               const std::string& binary) {
  auto e = begin(name, section, *p.target.target);
  args.ctx = e->fn->getArg(0);
  sema::ExprTable none;
  ExprLowering lower(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), none, args,
                     options_.string_bytes);
  processFilter(*e, lower);
  contextFilter(*e, lower, p);
  llvm::Value* value = lower.slot(kStashBytes);
  llvm::Value* now = module_.callHelper(e->b, Helper::KtimeGetNs, e->b.getInt64Ty(), {});
  e->b.CreateStore(now, value);
  for (uint32_t i = 0; i < std::min(nargs, kStashArgs); ++i) {
    Val v = lower.arg(i, checked_.types->u64());
    e->b.CreateStore(v.v, e->b.CreateGEP(e->b.getInt64Ty(), value, e->b.getInt64(1 + i)));
  }
  llvm::Value* key = tidKey(*e, lower);
  module_.callHelper(e->b, Helper::MapUpdateElem, e->b.getInt64Ty(),
                     {stash, key, value, e->b.getInt64(0)});
  e->b.CreateRet(e->b.getInt32(0));
  plan(name, attach, target, group, method, binary);
}

void ProgramBuilder::emitMain(const Probe& p, const std::string& name, const std::string& section,
                              Attach attach, const std::string& target, uint32_t group,
                              uint32_t method, ArgAccess args, const std::string& func,
                              llvm::GlobalVariable* stash, const std::string& binary) {
  auto e = begin(name, section, *p.target.target);
  args.ctx = e->fn->getArg(0);
  args.probe_args = &p.target.args;
  args.func = func;
  if (args.probe.empty()) args.probe = p.target.description;
  ExprLowering lower(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), p.probe.exprs,
                     args, options_.string_bytes);
  processFilter(*e, lower);
  contextFilter(*e, lower, p);

  if (stash) {
    llvm::Value* key = tidKey(*e, lower);
    llvm::Value* saved = mapLookup(*e, stash, key);
    auto* found = llvm::BasicBlock::Create(module_.context(), "stashed", e->fn);
    e->b.CreateCondBr(e->b.CreateIsNotNull(saved), found, e->bail);
    e->b.SetInsertPoint(found);
    // The exit program reads what the entry program saved, then forgets it.
    args.entry_ns = e->b.CreateLoad(e->b.getInt64Ty(), saved);
    args.stashed.clear();
    for (uint32_t i = 0; i < kStashArgs; ++i) {
      args.stashed.push_back(e->b.CreateLoad(
          e->b.getInt64Ty(), e->b.CreateGEP(e->b.getInt64Ty(), saved, e->b.getInt64(1 + i))));
    }
    module_.callHelper(e->b, Helper::MapDeleteElem, e->b.getInt64Ty(), {stash, key});
  }
  ExprLowering body(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), p.probe.exprs,
                    args, options_.string_bytes);
  body.setKernelBtf(&btf_);

  const ast::Clauses& clauses = p.query.query->clauses;
  if (clauses.where) {
    llvm::Value* keep = body.condition(*clauses.where);
    auto* pass = llvm::BasicBlock::Create(module_.context(), "kept", e->fn);
    e->b.CreateCondBr(keep, pass, e->bail);
    e->b.SetInsertPoint(pass);
  }
  e->b.SetCurrentDebugLocation(module_.location(e->fn->getSubprogram(), p.target.target->range.begin));
  if (p.aggregation) {
    emitAggregate(*e, body, p);
    e->b.CreateRet(e->b.getInt32(0));
    plan(name, attach, target, group, method, binary);
    return;
  }
  llvm::Value* record = module_.callHelper(e->b, Helper::RingbufReserve, e->b.getPtrTy(),
                                           {events_, e->b.getInt64(p.record_bytes), e->b.getInt64(0)});
  auto* reserved = llvm::BasicBlock::Create(module_.context(), "reserved", e->fn);
  auto* full = llvm::BasicBlock::Create(module_.context(), "full", e->fn);
  e->b.CreateCondBr(e->b.CreateIsNotNull(record), reserved, full);

  e->b.SetInsertPoint(full);
  countLost(*e, body, runtime::Lost::RingBufferFull);

  e->b.SetInsertPoint(reserved);
  writeHeader(*e, record, p.id);
  for (const Field& f : p.fields) writeField(*e, body, record, f, p.fields);
  module_.callHelper(e->b, Helper::RingbufSubmit, e->b.getVoidTy(), {record, e->b.getInt64(0)});
  e->b.CreateRet(e->b.getInt32(0));
  plan(name, attach, target, group, method, binary);
}

void ProgramBuilder::writeHeader(Emitter& e, llvm::Value* record, uint32_t probe_id) {
  llvm::IRBuilder<>& b = e.b;
  auto at = [&](uint32_t offset) { return b.CreateGEP(b.getInt8Ty(), record, b.getInt64(offset)); };
  b.CreateStore(module_.callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {}), at(0));
  b.CreateStore(b.getInt32(probe_id), at(8));
  b.CreateStore(b.CreateTrunc(module_.callHelper(b, Helper::GetSmpProcessorId, b.getInt64Ty(), {}),
                              b.getInt32Ty()),
                at(12));
  llvm::Value* pid_tgid = module_.callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
  b.CreateStore(b.CreateTrunc(b.CreateLShr(pid_tgid, b.getInt64(32)), b.getInt32Ty()), at(16));
  b.CreateStore(b.CreateTrunc(pid_tgid, b.getInt32Ty()), at(20));
  module_.callHelper(b, Helper::GetCurrentComm, b.getInt64Ty(), {at(24), b.getInt64(16)});
}

void ProgramBuilder::writeField(Emitter& e, ExprLowering& lower, llvm::Value* record,
                                const Field& f, const std::vector<Field>& all) {
  if (!f.within) return writeFieldBytes(e, lower, record, f, all);
  lower.enterBody(*f.within);
  writeFieldBytes(e, lower, record, f, all);
  lower.leaveBody();
}

void ProgramBuilder::writeFieldBytes(Emitter& e, ExprLowering& lower, llvm::Value* record,
                                     const Field& f, const std::vector<Field>& all) {
  llvm::IRBuilder<>& b = e.b;
  llvm::Value* dst = b.CreateGEP(b.getInt8Ty(), record, b.getInt64(f.layout.offset));
  if (f.layout.hidden && !f.expr) return;  // a record's address: written with the record
  if (f.layout.kind == FieldKind::Format) return;  // no bytes: its arguments are fields
  if (f.func_ip) {
    b.CreateStore(module_.callHelper(b, Helper::GetFuncIp, b.getInt64Ty(), {e.fn->getArg(0)}), dst);
    return;
  }
  switch (f.layout.kind) {
    case FieldKind::String:
      if (f.expr) {
        lower.storeString(*f.expr, dst, f.layout.size);
      } else {
        lower.storeArgString(f.arg, f.type, dst, f.layout.size);
      }
      return;
    case FieldKind::KernelStack:
    case FieldKind::UserStack:
      module_.callHelper(b, Helper::GetStack, b.getInt64Ty(),
                         {e.fn->getArg(0), dst, b.getInt64(f.layout.size),
                          b.getInt64(f.layout.kind == FieldKind::UserStack ? 256 : 0)});
      return;
    case FieldKind::Record: {
      llvm::Value* address;
      if (f.expr) {
        address = lower.storeRecord(*f.expr, dst, f.layout.size);
      } else {
        Val v = lower.arg(f.arg, f.type);
        lower.probeRead(dst, f.layout.size, v.v, v.user, false);
        address = v.v;
      }
      const FieldLayout& addr = all[f.layout.address_field].layout;
      b.CreateStore(address, b.CreateGEP(b.getInt8Ty(), record, b.getInt64(addr.offset)));
      return;
    }
    default: {
      Val v = f.expr ? lower.value(*f.expr) : lower.arg(f.arg, f.type);
      b.CreateStore(v.v, dst);
      return;
    }
  }
}

void ProgramBuilder::addForkFollower() {
  auto task = btf_.findStruct("task_struct");
  if (!task) return;
  const sema::Type* task_type = checked_.types->fromBtf(*task);
  auto tgid = checked_.types->findMember(task_type, "tgid");
  if (!tgid || tgid->steps.size() != 1) return;
  uint32_t group = newGroup("following forks");
  std::string name = programName();
  llvm::Function* fn = module_.addProgram(name, "tp_btf/sched_process_fork");
  llvm::IRBuilder<> b(module_.context());
  auto* entry = llvm::BasicBlock::Create(module_.context(), "entry", fn);
  auto* follow = llvm::BasicBlock::Create(module_.context(), "follow", fn);
  auto* done = llvm::BasicBlock::Create(module_.context(), "done", fn);
  b.SetInsertPoint(entry);
  b.SetCurrentDebugLocation(module_.location(fn->getSubprogram(), 0));
  const CoreTypes::Record& rec = core_.record(tgid->steps[0].first);
  auto [ir_index, di_index] = rec.index[tgid->steps[0].second];
  auto tgidOf = [&](uint32_t arg) {
    llvm::Value* slot = b.CreateGEP(b.getInt64Ty(), fn->getArg(0), b.getInt64(arg));
    llvm::Value* task_ptr = b.CreateIntToPtr(b.CreateLoad(b.getInt64Ty(), slot), b.getPtrTy());
    llvm::Value* field = b.CreatePreserveStructAccessIndex(rec.ir, task_ptr, ir_index, di_index, rec.di);
    return b.CreateLoad(b.getInt32Ty(), field);
  };
  auto keySlot = [&](llvm::Value* v) {
    llvm::IRBuilder<> top(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::Value* slot = top.CreateAlloca(b.getInt32Ty());
    b.CreateStore(v, slot);
    return slot;
  };
  llvm::Value* parent = keySlot(tgidOf(0));
  llvm::Value* found = module_.callHelper(b, Helper::MapLookupElem, b.getPtrTy(), {tracked_, parent});
  b.CreateCondBr(b.CreateIsNotNull(found), follow, done);
  b.SetInsertPoint(follow);
  llvm::Value* child = keySlot(tgidOf(1));
  llvm::IRBuilder<> top(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  llvm::Value* one = top.CreateAlloca(b.getInt8Ty());
  b.CreateStore(b.getInt8(1), one);
  module_.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {tracked_, child, one, b.getInt64(0)});
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRet(b.getInt32(0));
  plan(name, Attach::TpBtf, "sched_process_fork", group, 0);
}

}  // namespace kq::lower

namespace kq::lower {

void ProgramBuilder::countLost(Emitter& e, ExprLowering& lower, runtime::Lost why) {
  // A per-CPU counter, so a plain add; then the program ends.
  llvm::IRBuilder<>& b = e.b;
  llvm::Value* index = lower.slot(4);
  b.CreateStore(b.getInt32(static_cast<uint32_t>(why)), index);
  llvm::Value* counter = mapLookup(e, lost_, index);
  auto* count = llvm::BasicBlock::Create(module_.context(), "count_lost", e.fn);
  b.CreateCondBr(b.CreateIsNotNull(counter), count, e.bail);
  b.SetInsertPoint(count);
  b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), counter), b.getInt64(1)), counter);
  b.CreateBr(e.bail);
}

void ProgramBuilder::emitAggregate(Emitter& e, ExprLowering& lower, const Probe& p) {
  const Aggregation& agg = *p.aggregation;
  llvm::IRBuilder<>& b = e.b;
  if (!zeros_) {
    // One all-zero value, never written: where new entries are copied from (an aggregate's
    // value can be larger than the BPF stack).
    zeros_ = module_.addMap({"agg_zeros", MapType::Array, 1, 4, 8192});
  }
  llvm::Value* key = lower.slot(agg.layout.key_size);
  for (uint32_t i = 0; i < agg.layout.key_size; i += 8) {
    b.CreateStore(b.getInt64(0), b.CreateGEP(b.getInt8Ty(), key, b.getInt64(i)));
  }
  for (const Field& f : agg.keys) writeField(e, lower, key, f, agg.keys);

  llvm::Value* entry = mapLookup(e, agg.map, key);
  auto* missing = llvm::BasicBlock::Create(module_.context(), "new_entry", e.fn);
  auto* update = llvm::BasicBlock::Create(module_.context(), "update", e.fn);
  llvm::BasicBlock* from = b.GetInsertBlock();
  b.CreateCondBr(b.CreateIsNull(entry), missing, update);
  b.SetInsertPoint(missing);
  llvm::Value* zero_key = lower.slot(4);
  b.CreateStore(b.getInt32(0), zero_key);
  llvm::Value* zeros = mapLookup(e, zeros_, zero_key);
  auto* have_zeros = llvm::BasicBlock::Create(module_.context(), "zeros", e.fn);
  b.CreateCondBr(b.CreateIsNotNull(zeros), have_zeros, e.bail);
  b.SetInsertPoint(have_zeros);
  module_.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {agg.map, key, zeros, b.getInt64(1)});
  llvm::Value* created = mapLookup(e, agg.map, key);
  llvm::BasicBlock* created_end = b.GetInsertBlock();
  auto* created_ok = llvm::BasicBlock::Create(module_.context(), "created", e.fn);
  auto* table_full = llvm::BasicBlock::Create(module_.context(), "table_full", e.fn);
  b.CreateCondBr(b.CreateIsNotNull(created), created_ok, table_full);
  b.SetInsertPoint(table_full);
  countLost(e, lower, runtime::Lost::TableFull);
  b.SetInsertPoint(created_ok);
  b.CreateBr(update);
  b.SetInsertPoint(update);
  llvm::PHINode* value = b.CreatePHI(b.getPtrTy(), 2);
  value->addIncoming(entry, from);
  value->addIncoming(created, created_ok);
  (void)created_end;

  auto at = [&](uint32_t offset) { return b.CreateGEP(b.getInt8Ty(), value, b.getInt64(offset)); };
  auto add = [&](llvm::Value* ptr, llvm::Value* v) {
    b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, ptr, v, llvm::MaybeAlign(8),
                      llvm::AtomicOrdering::Monotonic);
  };
  auto bump = [&](llvm::Value* ptr) { add(ptr, b.getInt64(1)); };
  for (size_t i = 0; i < agg.layout.slots.size(); ++i) {
    const runtime::AggregateSlot& s = agg.layout.slots[i];
    const ast::Expr* arg = agg.arguments[i];
    llvm::Value* x = arg ? lower.value(*arg).v : nullptr;
    switch (s.kind) {
      case runtime::AggregateKind::Count:
      case runtime::AggregateKind::Top:
        add(at(s.offset), b.getInt64(1));
        break;
      case runtime::AggregateKind::Sum:
        add(at(s.offset), x);
        break;
      case runtime::AggregateKind::Avg:
        add(at(s.offset), x);
        add(at(s.offset + 8), b.getInt64(1));
        break;
      case runtime::AggregateKind::Min:
      case runtime::AggregateKind::Max: {
        // A seen flag, then the value; races between CPUs may lose an update.
        llvm::Value* seen = b.CreateLoad(b.getInt64Ty(), at(s.offset));
        llvm::Value* old = b.CreateLoad(b.getInt64Ty(), at(s.offset + 8));
        llvm::Value* better = s.kind == runtime::AggregateKind::Min ? b.CreateICmpSLT(x, old)
                                                                    : b.CreateICmpSGT(x, old);
        llvm::Value* store = b.CreateOr(b.CreateICmpEQ(seen, b.getInt64(0)), better);
        auto* set = llvm::BasicBlock::Create(module_.context(), "minmax", e.fn);
        auto* next = llvm::BasicBlock::Create(module_.context(), "after_minmax", e.fn);
        b.CreateCondBr(store, set, next);
        b.SetInsertPoint(set);
        b.CreateStore(x, at(s.offset + 8));
        b.CreateStore(b.getInt64(1), at(s.offset));
        b.CreateBr(next);
        b.SetInsertPoint(next);
        break;
      }
      case runtime::AggregateKind::Hist: {
        // Bucket 0 below 1, then bucket n for [2^(n-1), 2^n).
        // The bit length of x by binary search: BPF has no count-leading-zeros, and LLVM 16's
        // expansion of llvm.ctlz crashes its BPF instruction selection.
        llvm::Value* positive = b.CreateICmpSGT(x, b.getInt64(0));
        llvm::Value* rest = x;
        llvm::Value* bits = b.getInt64(0);
        for (uint64_t shift : {32, 16, 8, 4, 2, 1}) {
          llvm::Value* high = b.CreateICmpUGE(rest, b.getInt64(1ull << shift));
          rest = b.CreateSelect(high, b.CreateLShr(rest, b.getInt64(shift)), rest);
          bits = b.CreateSelect(high, b.CreateAdd(bits, b.getInt64(shift)), bits);
        }
        bits = b.CreateAdd(bits, b.getInt64(1));  // [2^k, 2^(k+1)) has k+1 bits
        llvm::Value* index = b.CreateSelect(positive, bits, b.getInt64(0));
        index = b.CreateSelect(b.CreateICmpUGT(index, b.getInt64(64)), b.getInt64(64), index);
        bump(b.CreateGEP(b.getInt8Ty(), at(s.offset), b.CreateMul(index, b.getInt64(8))));
        break;
      }
      case runtime::AggregateKind::Lhist: {
        llvm::Value* below = b.CreateICmpSLT(x, b.getInt64(s.lo));
        llvm::Value* above = b.CreateICmpSGE(x, b.getInt64(s.hi));
        // Unsigned division of a non-negative offset (BPF divides unsigned only).
        llvm::Value* offset = b.CreateSelect(below, b.getInt64(0), b.CreateSub(x, b.getInt64(s.lo)));
        llvm::Value* inside = b.CreateAdd(b.CreateUDiv(offset, b.getInt64(s.step)), b.getInt64(1));
        llvm::Value* index = b.CreateSelect(below, b.getInt64(0),
                                            b.CreateSelect(above, b.getInt64(s.buckets - 1), inside));
        llvm::Value* last = b.getInt64(s.buckets - 1);
        index = b.CreateSelect(b.CreateICmpUGT(index, last), last, index);
        bump(b.CreateGEP(b.getInt8Ty(), at(s.offset), b.CreateMul(index, b.getInt64(8))));
        break;
      }
    }
  }
}

}  // namespace kq::lower
