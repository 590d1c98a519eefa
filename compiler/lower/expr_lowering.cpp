#include "compiler/lower/expr_lowering.h"

#include <bpf/btf.h>

#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {
namespace {

using sema::TypeKind;

// x86-64 `struct pt_regs` offsets of the argument registers and the return value.
constexpr uint32_t kRegsArg[] = {112, 104, 96, 88, 72, 64};
constexpr uint32_t kRegsReturn = 80;

bool isSigned(const sema::Type* t) { return t->kind == TypeKind::Int && t->is_signed; }

}  // namespace

ExprLowering::ExprLowering(BpfModule& module, CoreTypes& core, sema::TypeTable& types,
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
      string_bytes_(string_bytes) {}

const sema::ExprInfo& ExprLowering::info(const ast::Expr& e) const { return exprs_->at(&e); }

void ExprLowering::at(const ast::Expr& e) {
  // Locations point into the query's own file; stdlib bodies keep their caller's.
  if (e.range.file == 0) b_.SetCurrentDebugLocation(module_.location(scope_, e.range.begin));
}

llvm::Value* ExprLowering::toPtr(llvm::Value* v) {
  if (v->getType()->isPointerTy()) return v;
  return b_.CreateIntToPtr(v, b_.getPtrTy());
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
  Helper h = user ? (str ? Helper::ProbeReadUserStr : Helper::ProbeReadUser)
                  : (str ? Helper::ProbeReadKernelStr : Helper::ProbeReadKernel);
  return module_.callHelper(b_, h, b_.getInt64Ty(), {dst, b_.getInt64(size), toPtr(src)});
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

// ---- places and loads -----------------------------------------------------------------

Place ExprLowering::member(const ast::Member& m) {
  Place base;
  if (m.arrow) {
    Val p = value(*m.base);
    base = Place{toPtr(p.v), p.type->element, p.btf, p.user};
  } else {
    base = place(*m.base);
  }
  at(m);
  const sema::MemberPath& path = *info(m).member;
  llvm::Value* addr = base.addr;
  for (const auto& [record, index] : path.steps) {
    const ::btf_type* raw = record.get();
    uint32_t bit_offset = btf_member_bit_offset(raw, index);
    uint32_t bits = btf_member_bitfield_size(raw, index);
    const CoreTypes::Record& rec = core_.record(record);
    auto [ir_index, di_index] = rec.index[index];
    if (bits || ir_index < 0) {
      // Bitfields (and members CO-RE cannot name) are read at this kernel's offsets.
      addr = b_.CreateGEP(b_.getInt8Ty(), addr, b_.getInt64(bit_offset / 8));
      return Place{addr, path.type, false, base.user, bits, bits ? bit_offset % 8 : 0};
    }
    addr = rec.is_union ? b_.CreatePreserveUnionAccessIndex(addr, di_index, rec.di)
                        : b_.CreatePreserveStructAccessIndex(rec.ir, addr, ir_index, di_index, rec.di);
  }
  return Place{addr, path.type, base.btf, base.user};
}

Place ExprLowering::place(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Member) return member(ast::as<ast::Member>(e));
  if (e.kind == ast::ExprKind::Index) {
    const auto& ix = ast::as<ast::Index>(e);
    const sema::Type* base_type = info(*ix.base).type;
    Place base;
    if (base_type->kind == TypeKind::Array) {
      base = place(*ix.base);
    } else {
      Val p = value(*ix.base);
      base = Place{toPtr(p.v), p.type, p.btf, p.user};
    }
    const sema::Type* element = base_type->element;
    Val i = value(*ix.index);
    at(e);
    llvm::Value* offset = b_.CreateMul(i.v, b_.getInt64(sizeOf(element)));
    bool constant = llvm::isa<llvm::ConstantInt>(i.v);
    llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), base.addr, offset);
    // The verifier follows constant offsets into BTF objects, not variable ones.
    return Place{addr, element, base.btf && constant, base.user};
  }
  if (e.kind == ast::ExprKind::Unary) {
    const auto& u = ast::as<ast::Unary>(e);
    Val p = value(*u.operand);
    return Place{toPtr(p.v), p.type->element, p.btf, p.user};
  }
  // A value with an address only in memory it was computed into.
  Val v = value(e);
  llvm::Value* tmp = slot(8);
  b_.CreateStore(v.v, tmp);
  return Place{tmp, v.type, true, false};
}

Val ExprLowering::load(const Place& p) {
  const sema::Type* type = p.type;
  if (type->kind == TypeKind::Array || type->isRecord()) {
    // An array decays to a pointer to its first element; a record is its address.
    Val out{b_.CreatePtrToInt(p.addr, b_.getInt64Ty()),
            types_.pointerTo(type->kind == TypeKind::Array ? type->element : type), p.btf, p.user};
    return out;
  }
  if (p.bitfield_bits) {
    uint32_t bytes = (p.bit_shift + p.bitfield_bits + 7) / 8;
    llvm::Value* tmp = slot(8);
    b_.CreateStore(b_.getInt64(0), tmp);
    probeRead(tmp, bytes, p.addr, p.user, false);
    llvm::Value* v = b_.CreateLoad(b_.getInt64Ty(), tmp);
    v = b_.CreateLShr(v, b_.getInt64(p.bit_shift));
    v = b_.CreateAnd(v, b_.getInt64((p.bitfield_bits >= 64 ? ~0ull : (1ull << p.bitfield_bits) - 1)));
    if (isSigned(type)) {
      uint32_t unused = 64 - p.bitfield_bits;
      v = b_.CreateAShr(b_.CreateShl(v, b_.getInt64(unused)), b_.getInt64(unused));
    }
    return Val{v, type};
  }
  uint32_t size = std::min<uint32_t>(sizeOf(type), 8);
  llvm::Type* int_type = b_.getIntNTy(size * 8);
  llvm::Value* raw;
  if (p.btf) {
    raw = b_.CreateLoad(int_type, p.addr);
  } else {
    llvm::Value* tmp = slot(8);
    b_.CreateStore(b_.getInt64(0), tmp);
    probeRead(tmp, size, p.addr, p.user, false);
    raw = b_.CreateLoad(int_type, tmp);
  }
  llvm::Value* wide = size == 8 ? raw
                      : isSigned(type) ? b_.CreateSExt(raw, b_.getInt64Ty())
                                       : b_.CreateZExt(raw, b_.getInt64Ty());
  Val out = extend(wide, type);
  out.btf = type->isPointer() && p.btf;
  out.user = p.user;
  return out;
}

// ---- arguments and builtins -------------------------------------------------------------

Val ExprLowering::arg(uint32_t index, const sema::Type* type) {
  llvm::Value* ctx = args_.ctx;
  switch (args_.kind) {
    case ArgAccess::Kind::CtxArray: {
      llvm::Value* addr = b_.CreateGEP(b_.getInt64Ty(), ctx, b_.getInt64(index));
      Val out = extend(b_.CreateLoad(b_.getInt64Ty(), addr), type);
      out.btf = type->isPointer();
      return out;
    }
    case ArgAccess::Kind::PtRegs: {
      uint32_t reg = index < args_.arg_positions.size() ? args_.arg_positions[index] : index;
      llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(kRegsArg[reg % 6]));
      Val out = extend(b_.CreateLoad(b_.getInt64Ty(), addr), type);
      out.user = args_.user_args;
      return out;
    }
    case ArgAccess::Kind::TracepointRecord: {
      const kernel::TracepointField& f = recordField(index);
      uint32_t size = f.size == 1 || f.size == 2 || f.size == 4 ? f.size : 8;
      llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(f.offset));
      llvm::Value* raw = b_.CreateLoad(b_.getIntNTy(size * 8), addr);
      llvm::Value* wide = size == 8 ? raw
                          : f.is_signed ? b_.CreateSExt(raw, b_.getInt64Ty())
                                        : b_.CreateZExt(raw, b_.getInt64Ty());
      Val out = extend(wide, type);
      out.user = args_.user_args && type->isPointer();
      return out;
    }
    case ArgAccess::Kind::Stash: {
      Val out = extend(args_.stashed.at(index), type);
      out.user = args_.user_args;
      return out;
    }
    case ArgAccess::Kind::None:
      break;
  }
  return Val{b_.getInt64(0), type};
}

const kernel::TracepointField& ExprLowering::recordField(uint32_t index) const {
  // Arguments count the record's fields, without a syscall record's `__syscall_nr`.
  uint32_t seen = 0;
  for (const kernel::TracepointField& f : args_.format->fields) {
    if (args_.skip_syscall_nr && f.name == "__syscall_nr") continue;
    if (seen++ == index) return f;
  }
  return args_.format->fields.back();
}

const sema::Type* ExprLowering::argType(uint32_t index) const {
  if (args_.probe_args) {
    for (const sema::ProbeArg& a : *args_.probe_args) {
      if (a.index == index) return a.type;
    }
  }
  return types_.u64();
}

Val ExprLowering::returnValue(const sema::Type* type) {
  llvm::Value* ctx = args_.ctx;
  llvm::Value* addr = nullptr;
  switch (args_.ret) {
    case ArgAccess::Ret::CtxSlot:
      addr = b_.CreateGEP(b_.getInt64Ty(), ctx, b_.getInt64(args_.return_slot));
      break;
    case ArgAccess::Ret::Regs:
      addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(kRegsReturn));
      break;
    case ArgAccess::Ret::SyscallExit:
      addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(16));  // `long ret`
      break;
    case ArgAccess::Ret::None:
      return Val{b_.getInt64(0), type};
  }
  Val out = extend(b_.CreateLoad(b_.getInt64Ty(), addr), type);
  out.user = args_.user_args && type->isPointer();
  return out;
}

Val ExprLowering::currentTaskChain(const std::vector<std::string>& members) {
  std::optional<btf::BtfType> task = btf_ ? btf_->findStruct("task_struct") : std::nullopt;
  if (!task) return Val{b_.getInt64(0), types_.u64()};
  Val current{module_.callHelper(b_, Helper::GetCurrentTask, b_.getInt64Ty(), {}),
              types_.pointerTo(types_.fromBtf(*task))};
  Place place{toPtr(current.v), current.type->element, false, false};
  for (size_t i = 0; i < members.size(); ++i) {
    const sema::Type* record = place.type;
    if (record->isPointer()) {
      // Through a pointer member: load it, then continue in what it points at.
      Val p = load(place);
      record = p.type->element;
      place = Place{toPtr(p.v), record, false, false};
    }
    auto path = types_.findMember(record, members[i]);
    if (!path) return Val{b_.getInt64(0), types_.u64()};
    llvm::Value* addr = place.addr;
    for (const auto& [rec_btf, index] : path->steps) {
      const CoreTypes::Record& rec = core_.record(rec_btf);
      auto [ir_index, di_index] = rec.index[index];
      if (ir_index < 0) return Val{b_.getInt64(0), types_.u64()};
      addr = rec.is_union ? b_.CreatePreserveUnionAccessIndex(addr, di_index, rec.di)
                          : b_.CreatePreserveStructAccessIndex(rec.ir, addr, ir_index, di_index, rec.di);
    }
    place = Place{addr, path->type, false, false};
  }
  return load(place);
}

// ---- values -------------------------------------------------------------------------------

Val ExprLowering::value(const ast::Expr& e) {
  const sema::ExprInfo& ei = info(e);
  switch (e.kind) {
    case ast::ExprKind::Integer:
      return Val{b_.getInt64(ast::as<ast::IntegerLiteral>(e).value), ei.type};
    case ast::ExprKind::Bool:
      return Val{b_.getInt64(ast::as<ast::BoolLiteral>(e).value ? 1 : 0), ei.type};
    case ast::ExprKind::String:
      return string(e, string_bytes_);
    case ast::ExprKind::Identifier:
      switch (ei.ref) {
        case sema::Ref::Arg: return arg(ei.index, ei.type);
        case sema::Ref::Param: return params_.at(ei.index);
        case sema::Ref::Builtin:
          if (ei.type->kind == TypeKind::String) return string(e, string_bytes_);
          return builtin(e, *ei.variable);
        case sema::Ref::Enumerator: return Val{b_.getInt64(ei.value), ei.type};
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
    case ast::ExprKind::Member:
    case ast::ExprKind::Index:
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
      // Pointer arithmetic counts elements, as in C.
      if (lt->isPointer() && rt->isInteger()) {
        uint32_t scale = lt->element->kind == TypeKind::Void ? 1 : sizeOf(lt->element);
        llvm::Value* delta = b_.CreateMul(r.v, b_.getInt64(scale));
        v = bin.op == Op::Add ? b_.CreateAdd(l.v, delta) : b_.CreateSub(l.v, delta);
        return Val{v, type, false, l.user};
      }
      if (rt->isPointer() && lt->isInteger()) {
        uint32_t scale = rt->element->kind == TypeKind::Void ? 1 : sizeOf(rt->element);
        return Val{b_.CreateAdd(r.v, b_.CreateMul(l.v, b_.getInt64(scale))), type, false, r.user};
      }
      v = bin.op == Op::Add ? b_.CreateAdd(l.v, r.v) : b_.CreateSub(l.v, r.v);
      if (lt->isPointer() && rt->isPointer()) {
        uint32_t scale = lt->element->kind == TypeKind::Void ? 1 : sizeOf(lt->element);
        return Val{b_.CreateUDiv(v, b_.getInt64(scale)), type};
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
    case Op::Shl: v = b_.CreateShl(l.v, r.v); break;
    case Op::Shr: v = result_signed ? b_.CreateAShr(l.v, r.v) : b_.CreateLShr(l.v, r.v); break;
    case Op::BitAnd: v = b_.CreateAnd(l.v, r.v); break;
    case Op::BitXor: v = b_.CreateXor(l.v, r.v); break;
    case Op::BitOr: v = b_.CreateOr(l.v, r.v); break;
    default: v = b_.getInt64(0); break;
  }
  return extend(v, type);
}

}  // namespace kq::lower
