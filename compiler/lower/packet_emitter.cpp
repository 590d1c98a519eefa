// What `packet` programs add to the main program (program_emitter.cpp): the kprobe's attach
// cookie (which function, where its skb is), the packet's journey (kept by the skb's
// address and by its data's head, so a clone sharing the data is on it too, until the last
// skb lets go), `track` (a packet recorded once is followed on its journey), and `graph`
// (each function's entry remembered for its return, whose record then says is_return).
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
      bool past = s.skb >= registers || (s.reason && *s.reason >= registers) || (s.copy_of && *s.copy_of >= registers);
      if (s.event.empty() && !s.program && !s.netfilter && past) args.packet->stack_args = true;
    }
  }
  if (args.packet->at_return) return;
  args.packet->identity = p.target.packet_identity ? &*p.target.packet_identity : nullptr;
  ExprLowering lower = lowering(program, p.probe.exprs, args);
  // Every call counts towards its depth, whichever packet it is for.
  if (p.graph) args.packet->depth = graphEnter(program, p, lower);
  if (args.packet->xdp) {
    xdpSkb(program, lower, p, args);
  } else if (args.packet->netfilter) {
    args.packet->skb = lower.netfilterSkb();
  } else {
    args.packet->skb = lower.packetSkb();
  }
  // Some tracepoints pass NULL (tcp_send_reset without an skb): no packet then.
  auto* some = llvm::BasicBlock::Create(b.getContext(), "has_skb", program.fn);
  b.CreateCondBr(b.CreateICmpNE(args.packet->skb, b.getInt64(0)), some, program.bail);
  b.SetInsertPoint(some);
  if (!p.journeys) args.packet->identity = nullptr;
  if (p.journeys) {
    args.packet->journey_before_free = program.frame.allocate(8);
    b.CreateStore(b.getInt64(0), args.packet->journey_before_free);
    // Before `where`: an skb freed where `where` no longer holds is forgotten all the same,
    // and a copy is on its original's journey before `where` asks whether it is followed.
    ExprLowering site = lowering(program, p.probe.exprs, args);
    if (args.packet->netfilter) {
      if (p.freed) netfilterDropJourney(program, site, p);
    } else {
      forgetFreed(program, site, p);
      inheritCopy(program, site, p);
    }
  }
  // A site the globs left out ends journeys (above) and shows nothing.
  if (std::any_of(p.target.packet_sites.begin(), p.target.packet_sites.end(),
                  [](const sema::PacketSite& s) { return s.unseen; })) {
    ExprLowering site = lowering(program, p.probe.exprs, args);
    auto* shown = llvm::BasicBlock::Create(b.getContext(), "site_shown", program.fn);
    b.CreateCondBr(site.packetUnseen(), program.bail, shown);
    b.SetInsertPoint(shown);
  }
}

void ProgramEmitter::xdpSkb(Program& program, ExprLowering& lower, const ProbeUnit& p, ArgAccess& args) {
  // The skb whose data the program runs on: generic XDP's own, veth's copy into its page
  // pool (skb_copy_header put the copy on the journey). A head no journey knows is a packet
  // kq was not asked about: the program returns.
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* start = lower.xdpHardStart();
  args.packet->skb = b.getInt64(0);
  if (!start || !p.heads) {
    b.CreateBr(program.bail);
    b.SetInsertPoint(llvm::BasicBlock::Create(b.getContext(), "no_xdp_skb", program.fn));
    return;
  }
  llvm::Value* key = program.frame.allocate(8);
  b.CreateStore(start, key);
  llvm::Value* entry = mapLookup(program, p.heads, key);
  auto* known = llvm::BasicBlock::Create(b.getContext(), "xdp_head_known", program.fn);
  auto* holds = llvm::BasicBlock::Create(b.getContext(), "xdp_skb_holds_head", program.fn);
  b.CreateCondBr(b.CreateIsNotNull(entry), known, program.bail);
  b.SetInsertPoint(known);
  args.packet->skb = b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt8Ty(), entry, b.getInt64(8)));
  // The skb kept there may have let go of the data since (a clone freed): not the packet.
  b.CreateCondBr(b.CreateICmpEQ(lower.packetHead(), start), holds, program.bail);
  b.SetInsertPoint(holds);
}

void ProgramEmitter::inheritCopy(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  llvm::Value* position = lower.packetCopyPosition();
  if (!position) return;
  auto* copying = llvm::BasicBlock::Create(b.getContext(), "copying", program.fn);
  auto* original_known = llvm::BasicBlock::Create(b.getContext(), "copy_of_journey", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "copied", program.fn);
  b.CreateCondBr(b.CreateICmpNE(position, b.getInt64(0)), copying, done);
  b.SetInsertPoint(copying);
  llvm::Value* original = program.frame.allocate(8);
  b.CreateStore(lower.packetCopied(position), original);
  llvm::Value* entry = mapLookup(program, p.journeys, original);
  b.CreateCondBr(b.CreateIsNotNull(entry), original_known, done);
  // The copy, new, takes its original's journey; its data (a head of its own) too.
  b.SetInsertPoint(original_known);
  llvm::Value* journey = b.CreateLoad(b.getInt64Ty(), entry);
  llvm::Value* head = p.heads ? lower.packetHead() : nullptr;
  llvm::Value* skb_key = program.frame.allocate(8);
  b.CreateStore(lower.packetSkb(), skb_key);
  llvm::Value* value = program.frame.allocate(16);
  b.CreateStore(journey, value);
  b.CreateStore(head ? head : b.getInt64(0), b.CreateGEP(b.getInt8Ty(), value, b.getInt64(8)));
  module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.journeys, skb_key, value, b.getInt64(0)});
  if (head) {
    llvm::Value* head_key = program.frame.allocate(8);
    b.CreateStore(head, head_key);
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                      {p.heads, head_key, headEntry(program, journey, lower.packetSkb()), b.getInt64(0)});
  }
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Value* ProgramEmitter::headEntry(Program& program, llvm::Value* journey, llvm::Value* skb) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* value = program.frame.allocate(16);
  b.CreateStore(journey, value);
  b.CreateStore(skb, b.CreateGEP(b.getInt8Ty(), value, b.getInt64(8)));
  return value;
}

namespace {

/// `current` where `keep` holds; else the value `other` emits, in a block of its own.
llvm::Value* keepOr(Program& program, llvm::Value* keep, llvm::Value* current, const char* name,
                    const std::function<llvm::Value*()>& other) {
  llvm::IRBuilder<>& b = program.b;
  llvm::BasicBlock* here = b.GetInsertBlock();
  auto* compute = llvm::BasicBlock::Create(b.getContext(), name, program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), std::string(name) + "_done", program.fn);
  b.CreateCondBr(keep, done, compute);
  b.SetInsertPoint(compute);
  llvm::Value* computed = other();
  llvm::BasicBlock* computed_in = b.GetInsertBlock();
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* out = b.CreatePHI(current->getType(), 2);
  out->addIncoming(current, here);
  out->addIncoming(computed, computed_in);
  return out;
}

}  // namespace

llvm::Value* ProgramEmitter::journeyIn(Program& program, llvm::GlobalVariable* map, llvm::Value* address) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(8);
  b.CreateStore(address, key);
  llvm::Value* entry = mapLookup(program, map, key);
  llvm::BasicBlock* here = b.GetInsertBlock();
  auto* found = llvm::BasicBlock::Create(b.getContext(), "journey_found", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "journey_in", program.fn);
  b.CreateCondBr(b.CreateIsNotNull(entry), found, done);
  b.SetInsertPoint(found);
  llvm::Value* journey = b.CreateLoad(b.getInt64Ty(), entry);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* out = b.CreatePHI(b.getInt64Ty(), 2);
  out->addIncoming(b.getInt64(0), here);
  out->addIncoming(journey, found);
  return out;
}

llvm::Value* ProgramEmitter::journeyKnown(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* by_skb = journeyIn(program, p.journeys, lower.packetSkb());
  llvm::Value* head = p.heads ? lower.packetHead() : nullptr;
  if (!head) return by_skb;
  // Only a clone is on its data's journey: an skb new at a head freed unseen is not.
  llvm::Value* clone = b.CreateAnd(b.CreateICmpEQ(by_skb, b.getInt64(0)), lower.packetCloned());
  return keepOr(program, b.CreateNot(clone), by_skb, "journey_by_head",
                [&] { return journeyIn(program, p.heads, head); });
}

void ProgramEmitter::forgetFreed(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  llvm::Value* frees = lower.packetFrees();
  llvm::Value* releases = p.heads ? lower.packetReleases() : b.getFalse();
  auto* freeing = llvm::BasicBlock::Create(b.getContext(), "freeing", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "forgotten", program.fn);
  b.CreateCondBr(b.CreateOr(frees, releases), freeing, done);
  b.SetInsertPoint(freeing);
  // What the event itself is on, for its record.
  b.CreateStore(journeyKnown(program, lower, p), lower.packetJourneyBeforeFree());
  auto* skb_freed = llvm::BasicBlock::Create(b.getContext(), "skb_freed", program.fn);
  auto* data = llvm::BasicBlock::Create(b.getContext(), "data_released", program.fn);
  b.CreateCondBr(frees, skb_freed, data);
  b.SetInsertPoint(skb_freed);
  llvm::Value* key = program.frame.allocate(8);
  b.CreateStore(lower.packetSkb(), key);
  module.callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.journeys, key});
  if (p.freed) {
    // For nft_do_chain's return, when a rule's drop freed it (netfilterDropJourney).
    llvm::Value* journey = lower.packetJourneyBeforeFree();
    auto* remember = llvm::BasicBlock::Create(b.getContext(), "remember_freed", program.fn);
    b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), journey), b.getInt64(0)), remember, data);
    b.SetInsertPoint(remember);
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.freed, key, journey, b.getInt64(0)});
  }
  b.CreateBr(data);
  b.SetInsertPoint(data);
  if (llvm::Value* head = p.heads ? lower.packetHead() : nullptr) {
    // The last skb holding the data lets go of it: a later skb there is another packet's.
    auto* releasing = llvm::BasicBlock::Create(b.getContext(), "releasing", program.fn);
    auto* last = llvm::BasicBlock::Create(b.getContext(), "last_user", program.fn);
    b.CreateCondBr(releases, releasing, done);
    b.SetInsertPoint(releasing);
    llvm::Value* users = lower.packetDataUsers(head);
    if (!users) {
      b.CreateBr(done);
    } else {
      b.CreateCondBr(b.CreateICmpULE(users, b.getInt64(1)), last, done);
      b.SetInsertPoint(last);
      llvm::Value* head_key = program.frame.allocate(8);
      b.CreateStore(head, head_key);
      module.callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.heads, head_key});
      b.CreateBr(done);
    }
  } else {
    b.CreateBr(done);
  }
  b.SetInsertPoint(done);
}

void ProgramEmitter::netfilterDropJourney(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  auto* dropped = llvm::BasicBlock::Create(b.getContext(), "nf_dropped", program.fn);
  auto* known = llvm::BasicBlock::Create(b.getContext(), "nf_dropped_known", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "nf_verdict", program.fn);
  b.CreateCondBr(lower.netfilterDropped(), dropped, done);
  // The skb at its address now may be another packet's: only the journey it was freed on.
  b.SetInsertPoint(dropped);
  llvm::Value* key = program.frame.allocate(8);
  b.CreateStore(lower.packetSkb(), key);
  llvm::Value* entry = mapLookup(program, p.freed, key);
  b.CreateCondBr(b.CreateIsNotNull(entry), known, program.bail);
  b.SetInsertPoint(known);
  b.CreateStore(b.CreateLoad(b.getInt64Ty(), entry), lower.packetJourneyBeforeFree());
  object_.module().callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.freed, key});
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Value* ProgramEmitter::packetTracked(Program& program, ExprLowering& lower, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* before_free = b.CreateLoad(b.getInt64Ty(), lower.packetJourneyBeforeFree());
  llvm::Value* journey = keepOr(program, b.CreateICmpNE(before_free, b.getInt64(0)), before_free, "track_lookup",
                                [&] { return journeyKnown(program, lower, p); });
  return b.CreateICmpNE(journey, b.getInt64(0));
}

void ProgramEmitter::packetJourney(Program& program, ExprLowering& lower, const ProbeUnit& p, ArgAccess& args) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = object_.module();
  llvm::Value* journey = program.frame.allocate(8);
  // A new journey: its first event's time, with the CPU in the low bits, so two never meet.
  llvm::Value* now = module.callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {});
  llvm::Value* cpu = module.callHelper(b, Helper::GetSmpProcessorId, b.getInt64Ty(), {});
  b.CreateStore(b.CreateOr(b.CreateAnd(now, b.getInt64(~uint64_t{63})), b.CreateAnd(cpu, b.getInt64(63))), journey);
  llvm::Value* before_free = b.CreateLoad(b.getInt64Ty(), lower.packetJourneyBeforeFree());
  auto* freed_known = llvm::BasicBlock::Create(b.getContext(), "journey_freed", program.fn);
  auto* not_freed = llvm::BasicBlock::Create(b.getContext(), "journey_live", program.fn);
  auto* keep = llvm::BasicBlock::Create(b.getContext(), "journey_keep", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "journey_done", program.fn);
  b.CreateCondBr(b.CreateICmpNE(before_free, b.getInt64(0)), freed_known, not_freed);
  b.SetInsertPoint(freed_known);
  b.CreateStore(before_free, journey);
  b.CreateBr(done);
  // Freed here and on no journey: a journey of one event, kept nowhere; but a clone freed
  // while other skbs hold its data (the clone of a packet waiting for ARP that the
  // neighbour probe frees) leaves its journey to its data, which the packet is on.
  b.SetInsertPoint(not_freed);
  llvm::Value* head = p.heads ? lower.packetHead() : nullptr;
  auto* freed_first = llvm::BasicBlock::Create(b.getContext(), "journey_first_freed", program.fn);
  b.CreateCondBr(lower.packetFrees(), freed_first, keep);
  b.SetInsertPoint(freed_first);
  if (llvm::Value* users = head ? lower.packetDataUsers(head) : nullptr) {
    auto* shared = llvm::BasicBlock::Create(b.getContext(), "freed_clone_shares", program.fn);
    b.CreateCondBr(b.CreateAnd(lower.packetCloned(), b.CreateICmpUGT(users, b.getInt64(1))), shared, done);
    b.SetInsertPoint(shared);
    llvm::Value* head_key = program.frame.allocate(8);
    b.CreateStore(head, head_key);
    // Its skb is going: an XDP program finds none there.
    llvm::Value* entry = headEntry(program, b.CreateLoad(b.getInt64Ty(), journey), b.getInt64(0));
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.heads, head_key, entry, b.getInt64(0)});
  }
  b.CreateBr(done);
  b.SetInsertPoint(keep);
  llvm::Value* skb_key = program.frame.allocate(8);
  b.CreateStore(lower.packetSkb(), skb_key);
  llvm::Value* entry = mapLookup(program, p.journeys, skb_key);
  auto* on_journey = llvm::BasicBlock::Create(b.getContext(), "skb_on_journey", program.fn);
  auto* new_skb = llvm::BasicBlock::Create(b.getContext(), "skb_new", program.fn);
  b.CreateCondBr(b.CreateIsNotNull(entry), on_journey, new_skb);
  // An skb seen before: its journey; a new data head (pskb_expand_head) is on it too.
  b.SetInsertPoint(on_journey);
  llvm::Value* known = b.CreateLoad(b.getInt64Ty(), entry);
  b.CreateStore(known, journey);
  if (head) {
    llvm::Value* head_at = b.CreateGEP(b.getInt8Ty(), entry, b.getInt64(8));
    auto* moved = llvm::BasicBlock::Create(b.getContext(), "head_moved", program.fn);
    b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), head_at), head), moved, done);
    b.SetInsertPoint(moved);
    b.CreateStore(head, head_at);
    llvm::Value* head_key = program.frame.allocate(8);
    b.CreateStore(head, head_key);
    llvm::Value* entry = headEntry(program, known, lower.packetSkb());
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.heads, head_key, entry, b.getInt64(0)});
  }
  b.CreateBr(done);
  // A new skb: a clone is on its data's journey, any other starts one (an skb new at a
  // head freed unseen is not a clone). LRU maps: they never refuse a packet; the oldest
  // make room.
  b.SetInsertPoint(new_skb);
  llvm::Value* value = program.frame.allocate(16);
  if (head) {
    llvm::Value* head_key = program.frame.allocate(8);
    b.CreateStore(head, head_key);
    llvm::Value* shared = mapLookup(program, p.heads, head_key);
    auto* clone = llvm::BasicBlock::Create(b.getContext(), "skb_clone", program.fn);
    auto* first = llvm::BasicBlock::Create(b.getContext(), "journey_new", program.fn);
    auto* store = llvm::BasicBlock::Create(b.getContext(), "skb_keep", program.fn);
    b.CreateCondBr(b.CreateAnd(b.CreateIsNotNull(shared), lower.packetCloned()), clone, first);
    b.SetInsertPoint(clone);
    b.CreateStore(b.CreateLoad(b.getInt64Ty(), shared), journey);
    b.CreateBr(store);
    b.SetInsertPoint(first);
    llvm::Value* entry = headEntry(program, b.CreateLoad(b.getInt64Ty(), journey), lower.packetSkb());
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.heads, head_key, entry, b.getInt64(0)});
    b.CreateBr(store);
    b.SetInsertPoint(store);
    b.CreateStore(head, b.CreateGEP(b.getInt8Ty(), value, b.getInt64(8)));
  } else {
    b.CreateStore(b.getInt64(0), b.CreateGEP(b.getInt8Ty(), value, b.getInt64(8)));
  }
  b.CreateStore(b.CreateLoad(b.getInt64Ty(), journey), value);
  module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.journeys, skb_key, value, b.getInt64(0)});
  b.CreateBr(done);
  b.SetInsertPoint(done);
  args.packet->journey = b.CreateLoad(b.getInt64Ty(), journey);
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
    llvm::Value* entered = program.frame.allocate(16);
    b.CreateStore(lower.packetSkb(), entered);
    b.CreateStore(lower.packetJourney(), b.CreateGEP(b.getInt8Ty(), entered, b.getInt64(8)));
    module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                      {p.graph, graphKey(program, lower, lower.packetDepth()), entered, b.getInt64(0)});
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
  args.packet->journey = b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt8Ty(), saved, b.getInt64(8)));
  object_.module().callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {p.graph, key});
  ExprLowering body = lowering(*program, p.probe.exprs, args);
  writeRecord(*program, body, p);
  reportProblems(body);
  finish(*program, name, site);
}

}  // namespace kq::lower
