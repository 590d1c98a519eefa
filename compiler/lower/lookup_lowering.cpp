// Lookups in tables of names (`caps[cap]`, `enum_name(state, "TCP_")`) inside a program.
// A record field keeps the key and the runtime prints its name, so most lookups cost the
// kernel nothing; a comparison with a name, folded by sema, compares the key with that
// name's keys; where a string is needed in the kernel, the name is chosen from the table's
// constants by a `switch` on the key, and a number the table does not name is written in
// decimal, as it prints. Part of ExprLowering (expr_lowering.h).
#include "compiler/lower/expr_lowering.h"

#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {

Val ExprLowering::lookupKey(const ast::Expr& e) {
  const sema::ExprInfo& ei = info(e);
  current_ = e.range;
  if (e.kind == ast::ExprKind::Index) return value(*ast::as<ast::Index>(e).index);
  // enum_name(x, "PREFIX")
  if (ei.ref == sema::Ref::BuiltinFunction) return value(*ast::as<ast::Call>(e).args[0]);
  // A syscall glob's `probe`: the call's number.
  if (ei.ref == sema::Ref::Builtin && ei.variable && ei.variable->id == sema::BuiltinVar::Probe) {
    return Val{probeKey(), types_.s64()};
  }
  if ((ei.ref == sema::Ref::Fn || ei.ref == sema::Ref::Property) && ei.fn) {
    enterBody(e);
    Val key = lookupKey(*ei.fn->body);
    leaveBody();
    return key;
  }
  if (ei.ref == sema::Ref::Let && ei.let) {
    const sema::ExprTable* saved = exprs_;
    exprs_ = ei.body.get();
    Val key = lookupKey(*ei.let->value);
    exprs_ = saved;
    return key;
  }
  // A value of a C header's enum: named by its enumerators (record_layout.cpp); a number
  // compared with a name sema found its keys of (`netns == "blue"`).
  if ((ei.type->kind == sema::TypeKind::Enum && ei.type->btf.file && ei.type->btf.file->user_space) ||
      (ei.type->isInteger() && !ei.table)) {
    return value(e);
  }
  return problem("this expression looks nothing up", types_.s64());
}

llvm::Value* ExprLowering::probeKey() {
  if (args_.probe_key) return b_.getInt64(*args_.probe_key);
  // A raw_syscalls program: the number its entry has in ctx[1], its exit in the registers.
  return syscallNumber(args_.kind != ArgAccess::Kind::SyscallRegs);
}

Val ExprLowering::compareKeys(const ast::Binary& bin, const std::vector<int64_t>& keys) {
  // The side looked up in a table, or (`netns == "blue"`) the number against the name.
  const sema::ExprInfo& lhs = info(*bin.lhs);
  bool left = (lhs.table && lhs.type->kind == sema::TypeKind::String) || lhs.type->isInteger();
  Val key = lookupKey(left ? *bin.lhs : *bin.rhs);
  at(bin);
  llvm::Value* named = b_.getFalse();
  for (int64_t k : keys) {
    named = b_.CreateOr(named, b_.CreateICmpEQ(key.v, b_.getInt64(static_cast<uint64_t>(k))));
  }
  if (bin.op == ast::BinaryOp::Ne) named = b_.CreateNot(named);
  return Val{b_.CreateZExt(named, b_.getInt64Ty()), info(bin).type};
}

void ExprLowering::storeLookup(const ast::Expr& e, llvm::Value* dst, uint32_t size) {
  const sema::LookupTable& table = *info(e).table;
  Val key = lookupKey(e);
  at(e);
  llvm::LLVMContext& ctx = b_.getContext();
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* done = llvm::BasicBlock::Create(ctx, "named", fn);
  auto* unnamed = llvm::BasicBlock::Create(ctx, "unnamed", fn);
  auto cases = static_cast<unsigned>(table.names.size());
  llvm::SwitchInst* choose = b_.CreateSwitch(key.v, unnamed, cases);
  for (const auto& [k, name] : table.names) {
    auto* block = llvm::BasicBlock::Create(ctx, "name", fn, unnamed);
    choose->addCase(b_.getInt64(static_cast<uint64_t>(k)), block);
    b_.SetInsertPoint(block);
    storeConstant(name, dst, size);
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(unnamed);
  storeDecimal(key.v, dst, size);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void ExprLowering::storeDecimal(llvm::Value* v, llvm::Value* dst, uint32_t size) {
  if (size == 0) return;
  // Straight-line code at fixed offsets (the verifier needs no loop): the magnitude's digits
  // from its largest power of ten down, after a `-`; NULs once the digits run out.
  llvm::Value* negative = b_.CreateICmpSLT(v, b_.getInt64(0));
  llvm::Value* magnitude = b_.CreateSelect(negative, b_.CreateNeg(v), v);
  llvm::Value* power = b_.getInt64(1);
  uint64_t p = 1;
  for (int k = 1; k <= 19; ++k) {
    p *= 10;
    power = b_.CreateSelect(b_.CreateICmpUGE(magnitude, b_.getInt64(p)), b_.getInt64(p), power);
  }
  constexpr uint32_t kLongest = 20;  // `-9223372036854775808`
  uint32_t chars = std::min(size - 1, kLongest);
  for (uint32_t j = 0; j < chars; ++j) {
    llvm::Value* has_digit = b_.CreateICmpNE(power, b_.getInt64(0));
    llvm::Value* divisor = b_.CreateSelect(has_digit, power, b_.getInt64(1));
    llvm::Value* digit = b_.CreateURem(b_.CreateUDiv(magnitude, divisor), b_.getInt64(10));
    llvm::Value* c =
        b_.CreateSelect(has_digit, b_.CreateAdd(digit, b_.getInt64('0')), b_.getInt64(0));
    if (j == 0) c = b_.CreateSelect(negative, b_.getInt64('-'), c);
    llvm::Value* at = b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(j));
    b_.CreateStore(b_.CreateTrunc(c, b_.getInt8Ty()), at);
    llvm::Value* next = b_.CreateUDiv(power, b_.getInt64(10));
    power = j == 0 ? b_.CreateSelect(negative, power, next) : next;
  }
  b_.CreateStore(b_.getInt8(0), b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(chars)));
}

}  // namespace kq::lower
