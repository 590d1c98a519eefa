#include "compiler/lower/frame.h"

#include "compiler/lower/object_builder.h"

namespace kq::lower {

Frame::Frame(ObjectBuilder& object, llvm::Function* fn, llvm::BasicBlock* setup,
             llvm::BasicBlock* bail, bool may_nest)
    : object_(object), fn_(fn), setup_(setup), bail_(bail), may_nest_(may_nest) {}

llvm::Value* Frame::allocate(uint32_t bytes, llvm::DebugLoc at) {
  bytes = (bytes + 7) / 8 * 8;
  if (stack_bytes_ + bytes <= kStackBudget) return onStack(bytes);
  llvm::Value* base = scratchBase();
  // After the null check: the verifier forbids arithmetic on a pointer that may be null.
  llvm::IRBuilder<> b(body_, body_->getFirstInsertionPt());
  llvm::Value* slot = b.CreateGEP(b.getInt8Ty(), base, b.getInt64(scratch_bytes_));
  scratch_bytes_ += bytes;
  if (scratch_bytes_ > kScratchLimit && !overflow_at_) overflow_at_ = at;
  object_.needScratchBytes(std::min(scratch_bytes_, kScratchLimit));
  return slot;
}

llvm::Value* Frame::onStack(uint32_t bytes) {
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  auto* alloca = entry.CreateAlloca(llvm::ArrayType::get(entry.getInt8Ty(), bytes));
  alloca->setAlignment(llvm::Align(8));
  stack_bytes_ += bytes;
  return alloca;
}

llvm::Value* Frame::scratchBase() {
  if (scratch_) return scratch_;
  // In `setup`: look up this program's scratch entry; without it the program ends.
  llvm::Value* key = onStack(8);
  llvm::Instruction* next = setup_->getTerminator();
  body_ = next->getSuccessor(0);
  llvm::IRBuilder<> b(next);
  b.SetCurrentDebugLocation(next->getDebugLoc());
  b.CreateStore(b.getInt32(object_.scratchEntry(may_nest_)), key);
  scratch_ = object_.module().callHelper(b, Helper::MapLookupElem, b.getPtrTy(),
                                         {object_.scratchMap(), key});
  b.CreateCondBr(b.CreateIsNotNull(scratch_), body_, bail_);
  next->eraseFromParent();
  return scratch_;
}

}  // namespace kq::lower
