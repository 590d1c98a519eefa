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
  // The slots after this one, in turn: a tail call to an empty slot falls through to the next.
  llvm::Value* mine = b.CreateLoad(b.getInt32Ty(), held);
  for (uint32_t j = 1; j < plan::kLiveSlots; ++j) {
    auto* call = llvm::BasicBlock::Create(ctx, "live_slot", program);
    auto* next = llvm::BasicBlock::Create(ctx, "live_next", program);
    b.CreateCondBr(b.CreateICmpULT(mine, b.getInt32(j)), call, next);
    b.SetInsertPoint(call);
    module.callHelper(b, Helper::TailCall, b.getInt64Ty(), {program->getArg(0), slots, b.getInt32(j)});
    b.CreateBr(next);
    b.SetInsertPoint(next);
  }
  b.CreateBr(done);
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
  for (uint32_t j = 0; j < plan::kLiveSlots; ++j) {
    module.callHelper(b, Helper::TailCall, b.getInt64Ty(), {fn->getArg(0), slots, b.getInt32(j)});
  }
  b.CreateRet(b.getInt32(0));
}

}  // namespace kq::lower
