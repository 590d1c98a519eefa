// Strings inside expressions: a string is a byte buffer on the stack (or a record field),
// filled from a literal, `comm`, `func`, `probe`, str(), a char array or a char pointer;
// `==`, `!=` and `~` compare against a literal's bytes (a trailing `*` matches a prefix), or
// two run-time strings up to their first NUL. Also storeRecord: a struct's bytes, read into a
// record field the same way. Part of ExprLowering (expr_lowering.h).
#include "compiler/lower/expr_lowering.h"

#include "compiler/lower/core_values.h"
#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {

using sema::TypeKind;

// ---- strings ------------------------------------------------------------------------------

Val ExprLowering::string(const ast::Expr& e, uint32_t max) {
  llvm::Value* dst = slot(max);
  storeString(e, dst, max);
  return Val{dst, types_.string(), false, false, max};
}

void ExprLowering::storeString(const ast::Expr& e, llvm::Value* dst, uint32_t size) {
  const sema::ExprInfo& ei = info(e);
  at(e);
  auto constant = [&](std::string_view text) {
    for (uint32_t i = 0; i < size; ++i) {
      char c = i < text.size() ? text[i] : 0;
      b_.CreateStore(b_.getInt8(c), b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(i)));
      if (i >= text.size()) break;
    }
  };
  if (e.kind == ast::ExprKind::String) {
    constant(ast::as<ast::StringLiteral>(e).value);
    return;
  }
  if (ei.table && ei.type->kind == TypeKind::String) {
    storeLookup(e, dst, size);  // `caps[cap]`: the name, chosen in the kernel
    return;
  }
  if (e.kind == ast::ExprKind::Conditional) {
    // Each side straight into `dst`: no buffer per alternative.
    const auto& c = ast::as<ast::Conditional>(e);
    llvm::Value* cond = condition(*c.cond);
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* then_block = llvm::BasicBlock::Create(b_.getContext(), "then", fn);
    auto* else_block = llvm::BasicBlock::Create(b_.getContext(), "else", fn);
    auto* done = llvm::BasicBlock::Create(b_.getContext(), "end_if", fn);
    b_.CreateCondBr(cond, then_block, else_block);
    b_.SetInsertPoint(then_block);
    storeString(*c.then, dst, size);
    b_.CreateBr(done);
    b_.SetInsertPoint(else_block);
    storeString(*c.otherwise, dst, size);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    return;
  }
  if (ei.ref == sema::Ref::Joined) {
    // Copied as kept, cut to `size` and ended with a NUL.
    const ArgAccess::Kept* k = kept(ei);
    if (!k) return;
    uint32_t n = std::min(size, k->bytes);
    if (n <= 256) {
      b_.CreateMemCpy(dst, llvm::MaybeAlign(1), k->addr, llvm::MaybeAlign(1), n);
    } else {
      probeRead(dst, n, k->addr, false, false);  // one helper call, not n loads and stores
    }
    b_.CreateStore(b_.getInt8(0), b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(n - 1)));
    return;
  }
  if (isName(e, ei) && ei.ref == sema::Ref::Builtin) {
    storeBuiltinString(*ei.variable, dst, size);
    return;
  }
  if (isName(e, ei) &&
      (ei.ref == sema::Ref::Property || ei.ref == sema::Ref::Fn || ei.ref == sema::Ref::Let ||
       ei.ref == sema::Ref::Param)) {
    if (ei.ref == sema::Ref::Param) {
      if (ei.index >= params_.size()) {
        problem("a parameter outside the function being expanded", ei.type);
        return;
      }
      const Val& p = params_[ei.index];
      b_.CreateMemCpy(dst, llvm::MaybeAlign(1), toPtr(p.v), llvm::MaybeAlign(1),
                      std::min(size, p.len ? p.len : size));
      return;
    }
    const sema::ExprTable* saved = exprs_;
    std::vector<Val> saved_params = params_;
    if (ei.ref == sema::Ref::Property) params_ = {arg(ei.index, argType(ei.index))};
    exprs_ = ei.body.get();
    storeString(ei.ref == sema::Ref::Let ? *ei.let->value : *ei.fn->body, dst, size);
    exprs_ = saved;
    params_ = saved_params;
    return;
  }
  if (e.kind == ast::ExprKind::Call) {
    const auto& c = ast::as<ast::Call>(e);
    if (ei.ref == sema::Ref::Fn) {
      std::vector<Val> args;
      for (const ast::ExprPtr& a : c.args) args.push_back(value(*a));
      const sema::ExprTable* saved = exprs_;
      std::vector<Val> saved_params = std::move(params_);
      exprs_ = ei.body.get();
      params_ = std::move(args);
      storeString(*ei.fn->body, dst, size);
      exprs_ = saved;
      params_ = std::move(saved_params);
      return;
    }
    // str(p[, n])
    if (c.args.empty()) {
      problem("`str` without an argument", ei.type);
      constant("");
      return;
    }
    const sema::Type* p_type = info(*c.args[0]).type;
    uint32_t n = size;
    if (c.args.size() == 2 && c.args[1]->kind == ast::ExprKind::Integer) {
      n = std::min<uint32_t>(size, static_cast<uint32_t>(ast::as<ast::IntegerLiteral>(*c.args[1]).value));
    }
    // A run-time length: that many characters at most, then a NUL (the field has room).
    llvm::Value* chars = c.args.size() >= 2 && c.args[1]->kind != ast::ExprKind::Integer
                             ? boundedLength(*c.args[1], size - 1)
                             : nullptr;
    if (p_type->kind == TypeKind::Array || p_type->kind == TypeKind::String) {
      storeString(*c.args[0], dst, n);
    } else {
      Val p = value(*c.args[0]);
      if (chars) {
        probeRead(dst, b_.CreateAdd(chars, b_.getInt64(1)), p.v, p.user, true);
      } else {
        readString(dst, n, p.v, p.user);
      }
    }
    if (chars) {
      b_.CreateStore(b_.getInt8(0), b_.CreateGEP(b_.getInt8Ty(), dst, chars));
      if (!(p_type->kind == TypeKind::Array || p_type->kind == TypeKind::String) && size >= 2) {
        // More characters than kept: the byte after the kept ones takes the NUL's place,
        // so that the string shows it went on (`…`), as one cut by its bytes does.
        llvm::Value* wanted = value(*c.args[1]).v;
        llvm::Function* fn = b_.GetInsertBlock()->getParent();
        auto* longer = llvm::BasicBlock::Create(b_.getContext(), "string_longer", fn);
        auto* done = llvm::BasicBlock::Create(b_.getContext(), "string_kept", fn);
        b_.CreateCondBr(b_.CreateICmpSGT(wanted, b_.getInt64(size - 1)), longer, done);
        b_.SetInsertPoint(longer);
        Val p = value(*c.args[0]);
        probeRead(b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(size - 1)), 1,
                  b_.CreateAdd(p.v, b_.getInt64(size - 1)), p.user, false);
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
      }
    }
    return;
  }
  if (ei.ref == sema::Ref::Arg) {
    storeArgString(ei.index, ei.type, dst, size);
    return;
  }
  if (ei.type->kind == TypeKind::Array) {
    Place p = place(e);
    uint32_t n = std::min(size, ei.type->size);
    probeRead(dst, n, b_.CreatePtrToInt(p.addr, b_.getInt64Ty()), p.user, false);
    if (n < size) b_.CreateStore(b_.getInt8(0), b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(n)));
    return;
  }
  // A char pointer: the string it points at.
  Val p = value(e);
  readString(dst, size, p.v, p.user);
}

void ExprLowering::storeArgString(uint32_t index, const sema::Type* type, llvm::Value* dst,
                                  uint32_t size) {
  if (args_.kind == ArgAccess::Kind::TracepointRecord && type->kind != TypeKind::Pointer) {
    const host::TracepointField* field_of = recordField(index);
    if (!field_of) {
      problem("the tracepoint record has no such field", type);
      return;
    }
    const host::TracepointField& f = *field_of;
    llvm::Value* field = b_.CreateGEP(b_.getInt8Ty(), args_.ctx, b_.getInt64(f.offset));
    if (f.type.rfind("__data_loc", 0) == 0) {
      // A tracepoint's `__data_loc` string: a u32 (length << 16 | offset) in the record.
      llvm::Value* loc = b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), field), b_.getInt64Ty());
      llvm::Value* offset = b_.CreateAnd(loc, b_.getInt64(0xffff));
      llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), args_.ctx, offset);
      readString(dst, size, b_.CreatePtrToInt(addr, b_.getInt64Ty()), false);
    } else {
      // A char array in the record.
      probeRead(dst, std::min(size, f.size), b_.CreatePtrToInt(field, b_.getInt64Ty()), false, false);
    }
    return;
  }
  if (type->kind == TypeKind::Array) {
    // A char array argument (tp_btf): read as bytes through its address.
    Val p = arg(index, type);
    probeRead(dst, std::min(size, type->size), p.v, p.user, false);
    return;
  }
  Val p = arg(index, type);
  readString(dst, size, p.v, p.user);
}

// The array's pointers one by one, each string read into its slot, until a NULL pointer: no
// loop for the verifier to walk, kJoinArgs reads of a pointer and a string. The count is
// kJoinArgs + 1 when a pointer follows the last string kept.
void ExprLowering::storeStringList(const ast::Expr& array, llvm::Value* dst, uint32_t size) {
  using plan::kJoinArgs;
  const uint32_t kJoinArgBytes = plan::joinArgBytes(size);
  Val base = value(array);  // an array is its address (see Val)
  at(array);
  bool user = base.user;
  b_.CreateStore(b_.getInt64(0), dst);
  llvm::Value* pointer = slot(8);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "join_done", fn);
  for (uint32_t i = 0; i <= kJoinArgs; ++i) {
    b_.CreateStore(b_.getInt64(0), pointer);
    probeRead(pointer, 8, b_.CreateGEP(b_.getInt8Ty(), toPtr(base.v), b_.getInt64(8 * i)), user, false);
    llvm::Value* p = b_.CreateLoad(b_.getInt64Ty(), pointer);
    auto* next = llvm::BasicBlock::Create(b_.getContext(), "join_string", fn, done);
    b_.CreateCondBr(b_.CreateICmpEQ(p, b_.getInt64(0)), done, next);
    b_.SetInsertPoint(next);
    if (i < kJoinArgs) {
      llvm::Value* into = b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(8 + i * kJoinArgBytes));
      readString(into, kJoinArgBytes, p, user);
    }
    b_.CreateStore(b_.getInt64(i + 1), dst);
  }
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

llvm::Value* ExprLowering::boundedLength(const ast::Expr& n, uint64_t max) {
  llvm::Value* v = value(n).v;
  at(n);
  // Each bound a branch of its own, as the verifier follows them to the helper's size.
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::Value* out = slot(8);
  b_.CreateStore(b_.getInt64(max), out);
  auto* below = llvm::BasicBlock::Create(b_.getContext(), "length_below_max", fn);
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "length_done", fn);
  b_.CreateCondBr(b_.CreateICmpSGT(v, b_.getInt64(max)), done, below);
  b_.SetInsertPoint(below);
  b_.CreateStore(b_.CreateSelect(b_.CreateICmpSLT(v, b_.getInt64(0)), b_.getInt64(0), v), out);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  // Loaded volatile, then masked: the verifier sees a value from 0 to max whatever LLVM
  // made of the branches.
  llvm::Value* len = b_.CreateLoad(b_.getInt64Ty(), out, /*isVolatile=*/true);
  uint64_t mask = 1;
  while (mask < max + 1) mask <<= 1;
  len = b_.CreateAnd(len, b_.getInt64(mask - 1));
  return b_.CreateSelect(b_.CreateICmpUGT(len, b_.getInt64(max)), b_.getInt64(max), len);
}

void ExprLowering::storeSizedBytes(const ast::Expr& e, const ast::Expr& n, llvm::Value* dst, uint32_t size) {
  llvm::Value* len = boundedLength(n, size - 8);
  b_.CreateStore(len, dst);
  Val v;
  const sema::Type* type = info(e).type;
  if (type->kind == TypeKind::Array && e.kind != ast::ExprKind::Identifier) {
    Place p = place(e);
    v = Val{b_.CreatePtrToInt(p.addr, b_.getInt64Ty()), type, p.btf, p.user};
  } else {
    v = value(e);
  }
  at(e);
  llvm::Value* read = probeRead(b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(8)), len, v.v, v.user, false);
  // A read that failed kept nothing.
  b_.CreateStore(b_.CreateSelect(b_.CreateICmpSLT(read, b_.getInt64(0)), b_.getInt64(0), len), dst);
}

void ExprLowering::storeBytes(const ast::Expr& e, llvm::Value* dst, uint32_t size) {
  const sema::Type* type = info(e).type;
  if (type->kind == TypeKind::String) {
    // Text (`comm`, a literal) ends at its NUL: the bytes after it are zeros. A field's
    // bytes are 8-aligned and rounded up to 8; volatile stores, as LLVM would merge them
    // into a memset, which BPF cannot call.
    for (uint32_t i = 0; i < size; i += 8) {
      b_.CreateStore(b_.getInt64(0), b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(i)), /*isVolatile=*/true);
    }
    storeString(e, dst, size);
    return;
  }
  Val v;
  if (type->kind == TypeKind::Array && e.kind != ast::ExprKind::Identifier) {
    // A char array's value is its string; its bytes are at its place.
    Place p = place(e);
    v = Val{b_.CreatePtrToInt(p.addr, b_.getInt64Ty()), type, p.btf, p.user};
  } else {
    v = value(e);  // a pointer, an address, or a struct or array (its address)
  }
  at(e);
  probeRead(dst, size, v.v, v.user, false);
}

Val ExprLowering::compareStrings(const ast::Binary& bin) {
  using Op = ast::BinaryOp;
  const ast::Expr* literal = nullptr;
  const ast::Expr* other = nullptr;
  if (bin.rhs->kind == ast::ExprKind::String) {
    literal = bin.rhs.get();
    other = bin.lhs.get();
  } else if (bin.lhs->kind == ast::ExprKind::String) {
    literal = bin.lhs.get();
    other = bin.rhs.get();
  }
  llvm::Value* equal = b_.getTrue();
  if (literal) {
    std::string text = ast::as<ast::StringLiteral>(*literal).value;
    const LiteralParameter* parameter = literalParameter(*literal);
    bool prefix = false;
    if (bin.op == Op::Match && !text.empty() && text.back() == '*') {
      text.pop_back();
      prefix = true;
    }
    // Compared: the literal's bytes, then (unless a prefix) the NUL after them. Read one
    // byte more: a string read into exactly that many bytes would be cut to fit and match.
    uint32_t need = static_cast<uint32_t>(text.size()) + (prefix ? 0 : 1);
    Val s = string(*other, need + 1);
    at(bin);
    // A word at a time (the buffer is 8-aligned, each load aligned to its width): "kqnobody"
    // is one 8-byte and one 1-byte comparison, not nine, in the kernel and for LLVM alike.
    for (uint32_t i = 0; i < need;) {
      uint32_t width = 8;
      while (width > need - i || i % width != 0) width /= 2;
      uint64_t want = 0;
      for (uint32_t k = 0; k < width && i + k < text.size(); ++k) {
        want |= uint64_t{static_cast<unsigned char>(text[i + k])} << (8 * k);  // little-endian
      }
      llvm::Type* word = b_.getIntNTy(8 * width);
      llvm::Value* c = b_.CreateAlignedLoad(word, b_.CreateGEP(b_.getInt8Ty(), s.v, b_.getInt64(i)),
                                            llvm::Align(width));
      // A live site's literal is read from .rodata, the same bytes at the same offsets.
      llvm::Value* wanted = parameter ? loadLiteralParameter(*parameter, width, i) : llvm::ConstantInt::get(word, want);
      equal = b_.CreateAnd(equal, b_.CreateICmpEQ(c, wanted));
      i += width;
    }
  } else {
    // Two strings known only at run time: equal up to the first NUL. A loop, not unrolled:
    // 64 byte pairs compared at once would need more registers (and stack) than BPF has.
    uint32_t n = string_bytes_;
    Val a = string(*bin.lhs, n);
    Val c = string(*bin.rhs, n);
    at(bin);
    equal = compareBuffers(a.v, c.v, n);
  }
  if (bin.op == Op::Ne) equal = b_.CreateNot(equal);
  return Val{b_.CreateZExt(equal, b_.getInt64Ty()), info(bin).type};
}

llvm::Value* ExprLowering::compareBuffers(llvm::Value* a, llvm::Value* c, uint32_t n) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b_.getContext();
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx, "strcmp", fn);
  auto* same = llvm::BasicBlock::Create(ctx, "strcmp_same", fn);
  auto* next = llvm::BasicBlock::Create(ctx, "strcmp_next", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "strcmp_done", fn);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
  i->addIncoming(b_.getInt64(0), from);
  llvm::Value* x = b_.CreateLoad(b_.getInt8Ty(), b_.CreateGEP(b_.getInt8Ty(), a, i));
  llvm::Value* y = b_.CreateLoad(b_.getInt8Ty(), b_.CreateGEP(b_.getInt8Ty(), c, i));
  b_.CreateCondBr(b_.CreateICmpEQ(x, y), same, done);
  b_.SetInsertPoint(same);
  b_.CreateCondBr(b_.CreateICmpEQ(x, b_.getInt8(0)), done, next);
  b_.SetInsertPoint(next);
  llvm::Value* i_next = b_.CreateAdd(i, b_.getInt64(1));
  i->addIncoming(i_next, next);
  llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpULT(i_next, b_.getInt64(n)), loop, done);
  // Keep it a loop: the verifier walks it (bounded by n), LLVM must not unroll it.
  llvm::MDNode* disable = llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
  llvm::MDNode* self = llvm::MDNode::getDistinct(ctx, {nullptr, disable});
  self->replaceOperandWith(0, self);
  back->setMetadata(llvm::LLVMContext::MD_loop, self);
  b_.SetInsertPoint(done);
  llvm::PHINode* result = b_.CreatePHI(b_.getInt1Ty(), 3);
  result->addIncoming(b_.getFalse(), loop);  // a byte differs
  result->addIncoming(b_.getTrue(), same);   // both ended together
  result->addIncoming(b_.getTrue(), next);   // n bytes equal
  return result;
}

// The read is as long as the record on the running kernel (a TYPE_SIZE relocation), but
// never longer than the field's `size`: the verifier needs the bound, and the layout has
// only that many bytes.
llvm::Value* ExprLowering::storeRecord(const ast::Expr& e, llvm::Value* dst, uint32_t size) {
  const sema::Type* type = info(e).type;
  const sema::Type* record = type->isPointer() ? type->element : type;
  llvm::Value* addr;
  bool user;
  if (type->isPointer()) {
    Val p = value(e);
    addr = p.v;
    user = p.user;
  } else {
    Place p = place(e);
    addr = b_.CreatePtrToInt(p.addr, b_.getInt64Ty());
    user = p.user;
  }
  llvm::Value* length = record->isRecord() && !record->incomplete && !record->btf.file->user_space
                            ? typeSize(b_, core_, record->btf)
                            : nullptr;
  if (!length) {
    probeRead(dst, size, addr, user, false);
    return addr;
  }
  length = b_.CreateSelect(b_.CreateICmpULT(length, b_.getInt64(size)), length, b_.getInt64(size));
  Helper h = user ? Helper::ProbeReadUser : Helper::ProbeReadKernel;
  module_.callHelper(b_, h, b_.getInt64Ty(), {dst, length, toPtr(addr)});
  return addr;
}

}  // namespace kq::lower
