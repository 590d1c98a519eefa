#include "compiler/lower/live_sites.h"

#include "compiler/lower/object_builder.h"
#include "plan/live_site.h"

namespace kq::lower {

bool mayBeLiveSlot(const plan::PlannedProgram& p) {
  switch (p.attach) {
    case plan::Attach::TpBtf:
    case plan::Attach::Tracepoint:
    case plan::Attach::Fentry:
    case plan::Attach::Fexit:
    case plan::Attach::Kprobe:
    case plan::Attach::Kretprobe:
    case plan::Attach::Uprobe:
    case plan::Attach::Uretprobe:
      return p.symbols.empty() && p.cookies.empty() && !p.whole_session;
    default:
      return false;
  }
}

namespace {

llvm::GlobalVariable* slotsMap(ObjectBuilder& object, const std::string& function) {
  if (auto* map = object.module().module().getNamedGlobal(plan::liveSlotsMap(function))) return map;
  return object.addMap({plan::liveSlotsMap(function), MapType::ProgArray, plan::kLiveSlots, 4, 4});
}

/// Tail calls at `b` to the slots from `first` on, in turn (one to an empty slot falls
/// through to the next), then on to `done`. A loop, not 32 calls in a row: the kernel's
/// verifier walks its iterations all the same, and LLVM compiles a job a millisecond or two
/// faster (the calls' constant indices saved no time an event that could be measured).
void emitSlotCalls(llvm::IRBuilder<>& b, llvm::Function* program, llvm::GlobalVariable* slots,
                   llvm::Value* first, llvm::BasicBlock* done, BpfModule& module) {
  llvm::LLVMContext& ctx = module.context();
  llvm::BasicBlock* before = b.GetInsertBlock();
  auto* test = llvm::BasicBlock::Create(ctx, "live_test", program);
  auto* call = llvm::BasicBlock::Create(ctx, "live_slot", program);
  b.CreateBr(test);
  b.SetInsertPoint(test);
  llvm::PHINode* slot = b.CreatePHI(b.getInt32Ty(), 2);
  slot->addIncoming(first, before);
  b.CreateCondBr(b.CreateICmpULT(slot, b.getInt32(plan::kLiveSlots)), call, done);
  b.SetInsertPoint(call);
  module.callHelper(b, Helper::TailCall, b.getInt64Ty(), {program->getArg(0), slots, slot});
  slot->addIncoming(b.CreateAdd(slot, b.getInt32(1)), b.GetInsertBlock());
  b.CreateBr(test);
}

}  // namespace

uint32_t emitLiveChain(ObjectBuilder& object, llvm::IRBuilder<>& b, llvm::Function* program,
                       const std::string& function) {
  BpfModule& module = object.module();
  llvm::LLVMContext& ctx = module.context();
  llvm::GlobalVariable* slots = slotsMap(object, function);
  llvm::GlobalVariable* slot = object.addMap({plan::liveSlotMap(function), MapType::Array, 1, 4, 4});
  llvm::IRBuilder<> entry(&program->getEntryBlock(), program->getEntryBlock().begin());
  llvm::Value* key = entry.CreateAlloca(b.getInt32Ty());
  b.CreateStore(b.getInt32(0), key);
  llvm::Value* held = module.callHelper(b, Helper::MapLookupElem, b.getPtrTy(), {slot, key});
  auto* chain = llvm::BasicBlock::Create(ctx, "live_chain", program);
  auto* done = llvm::BasicBlock::Create(ctx, "live_done", program);
  b.CreateCondBr(b.CreateIsNotNull(held), chain, done);
  b.SetInsertPoint(chain);
  // The slots after this one.
  llvm::Value* first = b.CreateAdd(b.CreateLoad(b.getInt32Ty(), held), b.getInt32(1));
  emitSlotCalls(b, program, slots, first, done, module);
  b.SetInsertPoint(done);
  return 8;
}

void emitLiveDispatcher(ObjectBuilder& object, const std::string& function, const std::string& section,
                        uint32_t offset) {
  BpfModule& module = object.module();
  llvm::GlobalVariable* slots = slotsMap(object, function);
  llvm::Function* fn = module.addProgram(plan::liveDispatcher(function), section, offset);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(module.context(), "entry", fn));
  b.SetCurrentDebugLocation(module.location(fn->getSubprogram(), offset));
  // The first slot that holds a program runs; the rest are its to call.
  auto* done = llvm::BasicBlock::Create(module.context(), "live_done", fn);
  emitSlotCalls(b, fn, slots, b.getInt32(0), done, module);
  b.SetInsertPoint(done);
  b.CreateRet(b.getInt32(0));
}

}  // namespace kq::lower
