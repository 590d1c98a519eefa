// What `packet` programs add to the main program (program_emitter.cpp): the kprobe's attach
// cookie (which function, where its skb is), `track` (an skb that matched once is followed
// by its address until freed), and `graph` (each function's entry remembered for its
// return, whose record then says is_return).
#include "compiler/lower/program_emitter.h"

namespace kq::lower {

using plan::Attach;

void ProgramEmitter::packetSetup(Program& program, const ProbeUnit& p, ArgAccess& args,
                                 const ProgramSite& site) {
  llvm::IRBuilder<>& b = program.b;
  bool kprobe = site.attach == Attach::Kprobe || site.attach == Attach::KprobeMulti ||
                site.attach == Attach::Kretprobe || site.attach == Attach::KretprobeMulti;
  if (kprobe) {
    args.packet->cookie = object_.module().callHelper(b, Helper::GetAttachCookie, b.getInt64Ty(),
                                                      {program.fn->getArg(0)});
    uint32_t registers = static_cast<uint32_t>(ptRegsLayout(args.arch).args.size());
    for (const sema::PacketSite& s : p.target.packet_sites) {
      if (s.event.empty() && (s.skb >= registers || (s.reason && *s.reason >= registers))) {
        args.packet->stack_args = true;
      }
    }
  }
  if (args.packet->at_return) return;
  ExprLowering lower = lowering(program, p.probe.exprs, args);
  // Every call counts towards its depth, whichever packet it is for.
  if (p.graph) args.packet->depth = graphEnter(program, p, lower);
  args.packet->skb = lower.packetSkb();
  // Some tracepoints pass NULL (tcp_send_reset without an skb): no packet then.
  auto* some = llvm::BasicBlock::Create(b.getContext(), "has_skb", program.fn);
  b.CreateCondBr(b.CreateICmpNE(args.packet->skb, b.getInt64(0)), some, program.bail);
  b.SetInsertPoint(some);
}

namespace {

llvm::Value* skbKey(Program& program, ExprLowering& lower) {
  llvm::Value* key = program.frame.allocate(8);
  program.b.CreateStore(lower.packetSkb(), key);
  return key;
}

}  // namespace

llvm::Value* ProgramEmitter::packetTracked(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  return program.b.CreateIsNotNull(mapLookup(program, p.tracked, skbKey(program, lower)));
}

void ProgramEmitter::packetMatched(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* value = program.frame.allocate(8);
  b.CreateStore(b.getInt64(1), value);
  // An LRU map: it never refuses a packet, and the oldest followed ones make room.
  object_.module().callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                              {p.tracked, skbKey(program, lower), value, b.getInt64(0)});
}

llvm::Value* ProgramEmitter::depthKey(Program& program, ExprLowering& lower) {
  // (thread, site): a function's return meets its entry on the same thread.
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(16);
  llvm::Value* pid_tgid = object_.module().callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
  b.CreateStore(b.CreateAnd(pid_tgid, b.getInt64(0xffffffff)), key);
  b.CreateStore(lower.packetSite(), b.CreateGEP(b.getInt8Ty(), key, b.getInt64(8)));
  return key;
}

llvm::Value* ProgramEmitter::graphKey(Program& program, ExprLowering& lower, llvm::Value* depth) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(24);
  b.CreateMemCpy(key, llvm::MaybeAlign(8), depthKey(program, lower), llvm::MaybeAlign(8), 16);
  b.CreateStore(depth, b.CreateGEP(b.getInt8Ty(), key, b.getInt64(16)));
  return key;
}

llvm::Value* ProgramEmitter::graphEnter(Program& program, const ProbeUnit& p, ExprLowering& lower) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* depth = lookupOrAdd(program, p.graph_depth, depthKey(program, lower), [&] {
    llvm::Value* zero = program.frame.allocate(8);
    b.CreateStore(b.getInt64(0), zero);
    return zero;
  }, /*BPF_NOEXIST*/ 1);
  auto* counted = llvm::BasicBlock::Create(b.getContext(), "depth", program.fn);
  b.CreateCondBr(b.CreateIsNotNull(depth), counted, program.bail);
  b.SetInsertPoint(counted);
  // Only this thread changes its own entry: a plain add.
  llvm::Value* deeper = b.CreateAdd(b.CreateLoad(b.getInt64Ty(), depth), b.getInt64(1));
  b.CreateStore(deeper, depth);
  return deeper;
}

void ProgramEmitter::packetRecorded(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  if (p.graph && !lower.packetAtReturn()) {
    llvm::Value* skb = program.frame.allocate(8);
    b.CreateStore(lower.packetSkb(), skb);
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                      {p.graph, graphKey(program, lower, lower.packetDepth()), skb, b.getInt64(0)});
  }
  if (p.tracked) {
    auto* forget = llvm::BasicBlock::Create(b.getContext(), "untrack", program.fn);
    auto* done = llvm::BasicBlock::Create(b.getContext(), "tracked", program.fn);
    b.CreateCondBr(lower.packetFrees(), forget, done);
    b.SetInsertPoint(forget);
    module.callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.tracked, skbKey(program, lower)});
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
}

void ProgramEmitter::emitPacketReturn(const ProbeUnit& p, ProgramSite site) {
  std::string name = object_.programName();
  auto program = begin(name, site.section, p.target.target->range);
  llvm::IRBuilder<>& b = program->b;
  ArgAccess& args = site.args;
  bindArguments(*program, p, site);
  args.packet->at_return = true;
  packetSetup(*program, p, args, site);
  // Only a function whose entry matched has an entry in the graph map: every other return
  // ends here, silently (most functions see packets that are not the query's).
  ExprLowering site_only = lowering(*program, p.probe.exprs, args);
  llvm::Value* depth = mapLookup(*program, p.graph_depth, depthKey(*program, site_only));
  auto* inside = llvm::BasicBlock::Create(b.getContext(), "inside", program->fn);
  auto* returning = llvm::BasicBlock::Create(b.getContext(), "returning", program->fn);
  b.CreateCondBr(b.CreateIsNotNull(depth), inside, program->bail);
  b.SetInsertPoint(inside);
  // A call entered before kq attached returns at depth 0: nothing of it was kept.
  llvm::Value* level = b.CreateLoad(b.getInt64Ty(), depth);
  b.CreateCondBr(b.CreateICmpEQ(level, b.getInt64(0)), program->bail, returning);
  b.SetInsertPoint(returning);
  b.CreateStore(b.CreateSub(level, b.getInt64(1)), depth);
  llvm::Value* key = graphKey(*program, site_only, level);
  llvm::Value* saved = mapLookup(*program, p.graph, key);
  auto* found = llvm::BasicBlock::Create(b.getContext(), "entered", program->fn);
  b.CreateCondBr(b.CreateIsNotNull(saved), found, program->bail);
  b.SetInsertPoint(found);
  args.packet->skb = b.CreateLoad(b.getInt64Ty(), saved);
  object_.module().callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.graph, key});
  ExprLowering body = lowering(*program, p.probe.exprs, args);
  writeRecord(*program, body, p);
  reportProblems(body);
  finish(*program, name, site);
}

}  // namespace kq::lower
