#include "compiler/lower/expr_lowering.h"

#include <bpf/btf.h>

#include <set>

#include <llvm/IR/CFG.h>

#include "compiler/ast/compare.h"
#include "compiler/ast/visitor.h"
#include "compiler/lower/core_values.h"
#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {
namespace {

using sema::TypeKind;

bool isSigned(const sema::Type* t) { return t->kind == TypeKind::Int && t->is_signed; }

bool isNameLookup(const sema::ExprInfo& ei) {
  return ei.table && ei.type->kind == TypeKind::String;
}

}  // namespace

ExprLowering::ExprLowering(BpfModule& module, CoreTypes& core, const sema::TypeTable& types,
                           llvm::IRBuilder<>& b, llvm::DISubprogram* scope,
                           const sema::ExprTable& exprs, const ArgAccess& args,
                           uint32_t string_bytes)
    : module_(module),
      core_(core),
      types_(types),
      b_(b),
      scope_(scope),
      exprs_(&exprs),
      args_(args),
      string_bytes_(string_bytes) {
  untyped_.type = types_.u64();
}

const sema::ExprInfo& ExprLowering::info(const ast::Expr& e) const {
  auto it = exprs_->find(&e);
  // Sema types every expression it accepts; a miss lowers as an unknown u64.
  return it != exprs_->end() ? it->second : untyped_;
}

void ExprLowering::at(const ast::Expr& e) {
  // Locations point into the query's own file; stdlib bodies keep their caller's.
  if (e.range.file == 0) b_.SetCurrentDebugLocation(module_.location(scope_, e.range.begin));
}

llvm::Value* ExprLowering::toPtr(llvm::Value* v) {
  if (v->getType()->isPointerTy()) return v;
  return b_.CreateIntToPtr(v, b_.getPtrTy());
}

llvm::Value* ExprLowering::readOnce(llvm::Type* type, llvm::Value* addr) {
  llvm::LoadInst* load = b_.CreateLoad(type, addr);
  load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b_.getContext(), {}));
  return load;
}

llvm::Value* ExprLowering::slot(uint32_t bytes) {
  if (frame_) return frame_->allocate(bytes, b_.getCurrentDebugLocation());
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  auto* alloca = entry.CreateAlloca(llvm::ArrayType::get(b_.getInt8Ty(), bytes));
  alloca->setAlignment(llvm::Align(8));
  return alloca;
}

llvm::Value* ExprLowering::probeRead(llvm::Value* dst, uint32_t size, llvm::Value* src,
                                     bool user, bool str) {
  return probeRead(dst, b_.getInt64(size), src, user, str);
}

llvm::Value* ExprLowering::probeRead(llvm::Value* dst, llvm::Value* size, llvm::Value* src, bool user,
                                     bool str) {
  Helper h = user ? (str ? Helper::ProbeReadUserStr : Helper::ProbeReadUser)
                  : (str ? Helper::ProbeReadKernelStr : Helper::ProbeReadKernel);
  return module_.callHelper(b_, h, b_.getInt64Ty(), {dst, size, toPtr(src)});
}

void ExprLowering::readString(llvm::Value* dst, uint32_t size, llvm::Value* src, bool user) {
  llvm::Value* read = probeRead(dst, size, src, user, true);
  if (size < 2) return;
  // The read filled the buffer (size - 1 characters and its NUL): the byte the NUL took is
  // the string's end or the next character, which then takes the NUL's place.
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* filled = llvm::BasicBlock::Create(b_.getContext(), "string_filled", fn);
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "string_read", fn);
  b_.CreateCondBr(b_.CreateICmpEQ(read, b_.getInt64(size)), filled, done);
  b_.SetInsertPoint(filled);
  llvm::Value* last = b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(size - 1));
  llvm::Value* next = b_.CreateAdd(b_.CreatePtrToInt(toPtr(src), b_.getInt64Ty()), b_.getInt64(size - 1));
  probeRead(last, 1, next, user, false);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

uint32_t ExprLowering::sizeOf(const sema::Type* t) const {
  if (t->isPointer()) return 8;
  return t->size ? t->size : 8;
}

Val ExprLowering::extend(llvm::Value* v, const sema::Type* type) {
  Val out{v, type};
  if (type->kind == TypeKind::Bool) {
    out.v = b_.CreateZExt(b_.CreateICmpNE(v, b_.getInt64(0)), b_.getInt64Ty());
    return out;
  }
  uint32_t size = type->isInteger() ? type->size : 8;
  if (size > 0 && size < 8) {
    llvm::Value* narrow = b_.CreateTrunc(v, b_.getIntNTy(size * 8));
    out.v = isSigned(type) ? b_.CreateSExt(narrow, b_.getInt64Ty())
                           : b_.CreateZExt(narrow, b_.getInt64Ty());
  }
  return out;
}

// ---- values -------------------------------------------------------------------------------

namespace {

/// Whether every path from the function's entry to `use` goes through `def`. The function
/// is still being written: blocks without a terminator yet have no successors, and blocks
/// are only ever entered by branches made before code is written into them.
bool dominates(const llvm::BasicBlock* def, const llvm::BasicBlock* use) {
  if (def == use) return true;
  const llvm::BasicBlock* entry = &use->getParent()->getEntryBlock();
  std::vector<const llvm::BasicBlock*> work{entry};
  std::set<const llvm::BasicBlock*> seen;
  while (!work.empty()) {
    const llvm::BasicBlock* block = work.back();
    work.pop_back();
    if (block == def || !seen.insert(block).second) continue;
    if (block == use) return false;
    if (const llvm::Instruction* end = block->getTerminator()) {
      for (const llvm::BasicBlock* next : llvm::successors(end)) work.push_back(next);
    }
  }
  return true;
}

/// Whether `value` keeps what `e` computes: values read from memory or from a helper, whose
/// second reading could differ from the first (arithmetic over them LLVM folds itself).
bool readsOnce(const ast::Expr& e, const sema::ExprInfo& ei) {
  switch (e.kind) {
    case ast::ExprKind::Member:
    case ast::ExprKind::Index:
    case ast::ExprKind::ReturnValue:
      return true;
    case ast::ExprKind::Unary:
      return ast::as<ast::Unary>(e).op == ast::UnaryOp::Deref;
    case ast::ExprKind::Identifier:
      return ei.ref == sema::Ref::Arg || ei.ref == sema::Ref::Builtin || ei.ref == sema::Ref::Property ||
             ei.ref == sema::Ref::Return || ei.ref == sema::Ref::Joined;
    default:
      return false;
  }
}

}  // namespace

const LiteralParameter* ExprLowering::literalParameter(const ast::Expr& e) const {
  if (!literals_ || (e.kind != ast::ExprKind::Integer && e.kind != ast::ExprKind::String)) return nullptr;
  return literals_->find(e);
}

bool ExprLowering::holdsLiteralParameter(const ast::Expr& e) const {
  if (!literals_) return false;
  struct Finder : ast::ExprVisitor<Finder> {
    const ExprLowering* self;
    bool found = false;
    void visitInteger(const ast::IntegerLiteral& l) { found = found || self->literalParameter(l); }
    void visitString(const ast::StringLiteral& l) { found = found || self->literalParameter(l); }
  } finder;
  finder.self = this;
  finder.visit(e);
  return finder.found;
}

llvm::Value* ExprLowering::loadLiteralParameter(const LiteralParameter& p, uint32_t width, uint32_t at) {
  llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), literals_global_, b_.getInt64(p.offset + at));
  // Volatile: LLVM must not fold the value the object was compiled with (another run of it
  // gives its own); the verifier still reads it as a constant of the frozen .rodata.
  return b_.CreateAlignedLoad(b_.getIntNTy(8 * width), addr, llvm::Align(width), /*isVolatile=*/true);
}

const Val* ExprLowering::known(const ast::Expr& e) const {
  const llvm::BasicBlock* here = b_.GetInsertBlock();
  for (const Known& k : known_) {
    if (k.exprs != exprs_ || !ast::sameExpr(*k.expr, e)) continue;
    const auto* inst = llvm::dyn_cast<llvm::Instruction>(k.val.v);
    if (!inst || !here || dominates(inst->getParent(), here)) return &k.val;
  }
  return nullptr;
}

Val ExprLowering::value(const ast::Expr& e) {
  // Inside a function's body its parameters differ from one expansion to the next: only
  // what the query itself writes is kept.
  bool keep = params_.empty() && readsOnce(e, info(e)) && !holdsLiteralParameter(e);
  if (keep) {
    if (const Val* v = known(e)) return *v;
  }
  Val v = compute(e);
  if (keep && v.v && !llvm::isa<llvm::Constant>(v.v)) known_.push_back({&e, exprs_, v});
  return v;
}

Val ExprLowering::compute(const ast::Expr& e) {
  const sema::ExprInfo& ei = info(e);
  current_ = e.range;
  if (ei.ref == sema::Ref::Joined) {
    if (ei.type->kind == TypeKind::String || ei.type->kind == TypeKind::Array) {
      return string(e, string_bytes_);
    }
    const ArgAccess::Kept* k = kept(ei);
    if (!k) return Val{b_.getInt64(0), ei.type};
    return Val{b_.CreateLoad(b_.getInt64Ty(), k->addr), ei.type};
  }
  switch (isName(e, ei) ? ast::ExprKind::Identifier : e.kind) {
    case ast::ExprKind::Integer:
      if (const LiteralParameter* p = literalParameter(e)) return Val{loadLiteralParameter(*p, 8, 0), ei.type};
      return Val{b_.getInt64(ast::as<ast::IntegerLiteral>(e).value), ei.type};
    case ast::ExprKind::Bool:
      return Val{b_.getInt64(ast::as<ast::BoolLiteral>(e).value ? 1 : 0), ei.type};
    case ast::ExprKind::String:
      return string(e, string_bytes_);
    case ast::ExprKind::Identifier:
      switch (ei.ref) {
        case sema::Ref::Arg: return arg(ei.index, ei.type);
        case sema::Ref::Param:
          if (ei.index < params_.size()) return params_[ei.index];
          return problem("a parameter outside the function being expanded", ei.type);
        case sema::Ref::Builtin:
          if (ei.type->kind == TypeKind::String) return string(e, string_bytes_);
          return builtin(e, *ei.variable);
        case sema::Ref::Enumerator:
          // A C header's (`use "app.h"`): as the header numbers it.
          if (ei.type->btf.file && ei.type->btf.file->user_space) {
            return Val{b_.getInt64(static_cast<uint64_t>(ei.value)), ei.type};
          }
          // Relocated: enumerators (drop reasons, states) are numbered differently by kernels.
          return Val{enumValue(b_, core_, ei.type->btf, nameOf(e), ei.value), ei.type};
        case sema::Ref::Return: return returnValue(ei.type);
        case sema::Ref::Let: {
          const sema::ExprTable* saved = exprs_;
          exprs_ = ei.body.get();
          Val v = value(*ei.let->value);
          exprs_ = saved;
          return v;
        }
        case sema::Ref::Property:
          return expand(ei, e, {arg(ei.index, argType(ei.index))});
        default:
          return Val{b_.getInt64(0), ei.type};
      }
    case ast::ExprKind::ReturnValue:
      return returnValue(ei.type);
    case ast::ExprKind::Call:
      return call(ast::as<ast::Call>(e));
    case ast::ExprKind::Index:
      // A lookup: a number for a name, folded by sema; or a name, as a string.
      if (ei.table && ei.table->stringKeys()) {
        return Val{b_.getInt64(static_cast<uint64_t>(ei.value)), ei.type};
      }
      if (isNameLookup(ei)) return string(e, string_bytes_);
      [[fallthrough]];
    case ast::ExprKind::Member:
      if (ei.type->isStringLike() && ei.type->kind == TypeKind::Array) return string(e, string_bytes_);
      return load(place(e));
    case ast::ExprKind::Unary: {
      const auto& u = ast::as<ast::Unary>(e);
      if (u.op == ast::UnaryOp::Deref) return load(place(e));
      if (u.op == ast::UnaryOp::AddressOf) {
        Place p = place(*u.operand);
        return Val{b_.CreatePtrToInt(p.addr, b_.getInt64Ty()), ei.type, false, p.user};
      }
      Val x = value(*u.operand);
      at(e);
      switch (u.op) {
        case ast::UnaryOp::Negate: return extend(b_.CreateNeg(x.v), ei.type);
        case ast::UnaryOp::BitNot: return extend(b_.CreateNot(x.v), ei.type);
        case ast::UnaryOp::LogicalNot:
          return Val{b_.CreateZExt(b_.CreateICmpEQ(x.v, b_.getInt64(0)), b_.getInt64Ty()), ei.type};
        default: return x;
      }
    }
    case ast::ExprKind::Binary:
      return binary(ast::as<ast::Binary>(e));
    case ast::ExprKind::Conditional: {
      const auto& c = ast::as<ast::Conditional>(e);
      llvm::Value* cond = condition(*c.cond);
      Val a = value(*c.then);
      Val b = value(*c.otherwise);
      at(e);
      return Val{b_.CreateSelect(cond, a.v, b.v), ei.type, a.btf && b.btf, a.user};
    }
    case ast::ExprKind::Cast:
      return cast(ast::as<ast::Cast>(e));
    case ast::ExprKind::Table:
      return problem("a table has no value; its lookups have", ei.type);
  }
  return Val{b_.getInt64(0), ei.type};
}

llvm::Value* ExprLowering::condition(const ast::Expr& e) {
  Val v = value(e);
  return b_.CreateICmpNE(v.v, b_.getInt64(0));
}

Val ExprLowering::cast(const ast::Cast& c) {
  Val v = value(*c.operand);
  const sema::Type* to = info(c).type;
  at(c);
  if (to->isPointer()) {
    // The verifier still sees the old type: reads through the cast pointer are probe reads.
    return Val{v.v, to, false, v.user};
  }
  Val out = extend(v.v, to);
  return out;
}

Val ExprLowering::expand(const sema::ExprInfo& ei, const ast::Expr& use, std::vector<Val> args) {
  const sema::ExprTable* saved_exprs = exprs_;
  std::vector<Val> saved_params = std::move(params_);
  exprs_ = ei.body.get();
  params_ = std::move(args);
  Val v = value(*ei.fn->body);
  exprs_ = saved_exprs;
  params_ = std::move(saved_params);
  (void)use;
  return v;
}

void ExprLowering::enterBody(const ast::Expr& use) {
  const sema::ExprInfo& ei = info(use);
  std::vector<Val> args;
  if (ei.ref == sema::Ref::Property) {
    args.push_back(arg(ei.index, argType(ei.index)));
  } else {
    for (const ast::ExprPtr& a : ast::as<ast::Call>(use).args) args.push_back(value(*a));
  }
  outer_scopes_.emplace_back(exprs_, std::move(params_));
  exprs_ = ei.body.get();
  params_ = std::move(args);
}

void ExprLowering::leaveBody() {
  if (outer_scopes_.empty()) return;  // not inside a body: nothing to leave
  exprs_ = outer_scopes_.back().first;
  params_ = std::move(outer_scopes_.back().second);
  outer_scopes_.pop_back();
}

Val ExprLowering::call(const ast::Call& c) {
  const sema::ExprInfo& ei = info(c);
  if (ei.ref == sema::Ref::Fn) {
    std::vector<Val> args;
    for (const ast::ExprPtr& a : c.args) args.push_back(value(*a));
    return expand(ei, c, std::move(args));
  }
  if (ei.ref == sema::Ref::CFunction) return cCall(c, ei);
  return builtinCall(c, ei);
}

Val ExprLowering::binary(const ast::Binary& bin) {
  using Op = ast::BinaryOp;
  const sema::Type* type = info(bin).type;
  if (bin.op == Op::And || bin.op == Op::Or) {
    // Short-circuit: `p != 0 and p->x` never reads through a null p.
    llvm::Value* lhs = condition(*bin.lhs);
    llvm::BasicBlock* from = b_.GetInsertBlock();
    llvm::Function* fn = from->getParent();
    auto* rhs_block = llvm::BasicBlock::Create(b_.getContext(), "rhs", fn);
    auto* done = llvm::BasicBlock::Create(b_.getContext(), "done", fn);
    if (bin.op == Op::And) {
      b_.CreateCondBr(lhs, rhs_block, done);
    } else {
      b_.CreateCondBr(lhs, done, rhs_block);
    }
    b_.SetInsertPoint(rhs_block);
    llvm::Value* rhs = condition(*bin.rhs);
    llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getInt1(bin.op == Op::Or), from);
    phi->addIncoming(rhs, rhs_end);
    return Val{b_.CreateZExt(phi, b_.getInt64Ty()), type};
  }
  if (const auto& keys = info(bin).keys) return compareKeys(bin, *keys);
  const sema::Type* lt = info(*bin.lhs).type;
  const sema::Type* rt = info(*bin.rhs).type;
  if (bin.op == Op::Match || (lt->isStringLike() && rt->isStringLike() &&
                              (lt->kind == TypeKind::String || rt->kind == TypeKind::String))) {
    return compareStrings(bin);
  }
  Val l = value(*bin.lhs);
  Val r = value(*bin.rhs);
  at(bin);
  bool is_signed = isSigned(lt) && (isSigned(rt) || bin.rhs->kind == ast::ExprKind::Integer);
  auto boolean = [&](llvm::Value* i1) { return Val{b_.CreateZExt(i1, b_.getInt64Ty()), type}; };
  switch (bin.op) {
    case Op::Eq: return boolean(b_.CreateICmpEQ(l.v, r.v));
    case Op::Ne: return boolean(b_.CreateICmpNE(l.v, r.v));
    case Op::Lt: return boolean(is_signed ? b_.CreateICmpSLT(l.v, r.v) : b_.CreateICmpULT(l.v, r.v));
    case Op::Le: return boolean(is_signed ? b_.CreateICmpSLE(l.v, r.v) : b_.CreateICmpULE(l.v, r.v));
    case Op::Gt: return boolean(is_signed ? b_.CreateICmpSGT(l.v, r.v) : b_.CreateICmpUGT(l.v, r.v));
    case Op::Ge: return boolean(is_signed ? b_.CreateICmpSGE(l.v, r.v) : b_.CreateICmpUGE(l.v, r.v));
    default: break;
  }
  bool result_signed = isSigned(type);
  llvm::Value* v = nullptr;
  switch (bin.op) {
    case Op::Add:
    case Op::Sub: {
      // Pointer arithmetic counts elements, as in C (of the running kernel's size).
      if (lt->isPointer() && rt->isInteger()) {
        llvm::Value* delta = b_.CreateMul(r.v, elementSize(lt->element));
        v = bin.op == Op::Add ? b_.CreateAdd(l.v, delta) : b_.CreateSub(l.v, delta);
        return Val{v, type, false, l.user};
      }
      if (rt->isPointer() && lt->isInteger()) {
        return Val{b_.CreateAdd(r.v, b_.CreateMul(l.v, elementSize(rt->element))), type, false, r.user};
      }
      v = bin.op == Op::Add ? b_.CreateAdd(l.v, r.v) : b_.CreateSub(l.v, r.v);
      if (lt->isPointer() && rt->isPointer()) {
        return Val{b_.CreateUDiv(v, elementSize(lt->element)), type};
      }
      break;
    }
    case Op::Mul: v = b_.CreateMul(l.v, r.v); break;
    case Op::Div:
    case Op::Mod: {
      // BPF (before cpu v4) divides unsigned only: signed division goes through magnitudes.
      bool div = bin.op == Op::Div;
      if (!result_signed) {
        v = div ? b_.CreateUDiv(l.v, r.v) : b_.CreateURem(l.v, r.v);
        break;
      }
      llvm::Value* zero = b_.getInt64(0);
      llvm::Value* l_neg = b_.CreateICmpSLT(l.v, zero);
      llvm::Value* r_neg = b_.CreateICmpSLT(r.v, zero);
      llvm::Value* la = b_.CreateSelect(l_neg, b_.CreateNeg(l.v), l.v);
      llvm::Value* ra = b_.CreateSelect(r_neg, b_.CreateNeg(r.v), r.v);
      llvm::Value* q = div ? b_.CreateUDiv(la, ra) : b_.CreateURem(la, ra);
      llvm::Value* negate = div ? b_.CreateXor(l_neg, r_neg) : l_neg;
      v = b_.CreateSelect(negate, b_.CreateNeg(q), q);
      break;
    }
    case Op::Shl:
    case Op::Shr: {
      // A count known only when the event happens may be out of 0 to 63 (sema refuses a
      // constant one), where LLVM's shift is poison: such a count shifts every bit out
      // (0, or -1 for `>>` of a negative signed value), as if the value were wider.
      llvm::Value* out_of_range = b_.CreateICmpUGT(r.v, b_.getInt64(63));
      llvm::Value* count = b_.CreateAnd(r.v, b_.getInt64(63));
      if (bin.op == Op::Shl) {
        v = b_.CreateSelect(out_of_range, b_.getInt64(0), b_.CreateShl(l.v, count));
      } else if (result_signed) {
        v = b_.CreateAShr(l.v, b_.CreateSelect(out_of_range, b_.getInt64(63), count));
      } else {
        v = b_.CreateSelect(out_of_range, b_.getInt64(0), b_.CreateLShr(l.v, count));
      }
      break;
    }
    case Op::BitAnd: v = b_.CreateAnd(l.v, r.v); break;
    case Op::BitXor: v = b_.CreateXor(l.v, r.v); break;
    case Op::BitOr: v = b_.CreateOr(l.v, r.v); break;
    default: v = b_.getInt64(0); break;
  }
  return extend(v, type);
}

}  // namespace kq::lower

namespace kq::lower {

const ArgAccess::Kept* ExprLowering::kept(const sema::ExprInfo& info) {
  if (info.index < args_.joined.size() && info.slot < args_.joined[info.index].size()) {
    return &args_.joined[info.index][info.slot];
  }
  problem("a joined value this program did not look up", info.type);
  return nullptr;
}

bool ExprLowering::isName(const ast::Expr& e, const sema::ExprInfo& ei) {
  if (e.kind == ast::ExprKind::Identifier) return true;
  return e.kind == ast::ExprKind::Member && ei.ref != sema::Ref::None;
}

const std::string& ExprLowering::nameOf(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Member) return ast::as<ast::Member>(e).member;
  return ast::as<ast::Identifier>(e).name;
}

}  // namespace kq::lower
