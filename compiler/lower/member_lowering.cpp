// Places and loads: members (CO-RE accesses, bitfields through field-info relocations),
// array elements and pointer targets (strides relocated for kernel records), and `current`'s
// members for builtins. Part of ExprLowering (expr_lowering.h).
#include "compiler/lower/expr_lowering.h"

#include <bpf/btf.h>

#include "compiler/lower/core_values.h"

namespace kq::lower {
namespace {

using sema::TypeKind;

bool isSigned(const sema::Type* t) { return t->kind == TypeKind::Int && t->is_signed; }

/// What a value of `type` points at: a pointer's target, an array's element, or (a record
/// being its own address) the record.
const sema::Type* pointee(const sema::Type* type) {
  if (type->isRecord()) return type;
  return type->element ? type->element : type;
}

/// The smallest aligned unit (1, 2, 4 or 8 bytes) holding `bits` bits at `bit_offset`, the
/// way a compiler picks a bitfield's storage; 0 when none does.
uint32_t storageBytes(uint32_t bit_offset, uint32_t bits) {
  for (uint32_t bytes = 1; bytes <= 8; bytes *= 2) {
    uint32_t unit = bytes * 8;
    if (bit_offset / unit == (bit_offset + bits - 1) / unit) return bytes;
  }
  return 0;
}

}  // namespace

llvm::Value* ExprLowering::access(llvm::Value* addr,
                                  const std::vector<std::pair<btf::BtfType, uint32_t>>& steps) {
  for (const auto& [record, index] : steps) {
    if (record.file->user_space) {
      // A C header's type: laid out as the header says, at a fixed offset.
      const ::btf_type* raw = record.get();
      if (index >= btf_vlen(raw) || btf_member_bitfield_size(raw, index) != 0) return nullptr;
      uint32_t offset = btf_member_bit_offset(raw, index) / 8;
      addr = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), addr, offset);
      continue;
    }
    const CoreTypes::Record& rec = core_.record(record);
    if (index >= rec.index.size()) return nullptr;
    auto [ir_index, di_index] = rec.index[index];
    if (rec.is_union) {
      addr = b_.CreatePreserveUnionAccessIndex(addr, di_index, rec.di);
      continue;
    }
    llvm::StructType* ir = rec.ir;
    if (ir_index < 0) {
      // No IR element of its own: the access's IR type gives only the storage unit.
      const ::btf_type* raw = record.get();
      uint32_t bits = btf_member_bitfield_size(raw, index);
      uint32_t unit = bits ? storageBytes(btf_member_bit_offset(raw, index), bits) : 1;
      if (unit == 0) return nullptr;
      ir = core_.storageUnit(unit);
      ir_index = 0;
    }
    addr = b_.CreatePreserveStructAccessIndex(ir, addr, ir_index, di_index, rec.di);
  }
  return addr;
}

Place ExprLowering::member(const ast::Member& m) {
  Place base;
  if (m.arrow) {
    Val p = value(*m.base);
    base = Place{toPtr(p.v), pointee(p.type), p.btf, p.user};
  } else {
    base = place(*m.base);
  }
  at(m);
  const sema::ExprInfo& ei = info(m);
  if (!ei.member) {
    problem("a member sema did not resolve", ei.type);
    return Place{base.addr, types_.u64(), false, base.user};
  }
  const sema::MemberPath& path = *ei.member;
  if (path.bitfield_bits != 0 && path.steps.back().first.file->user_space) {
    problem("a bitfield of a C header's type (kq reads those of the kernel's types only)", ei.type);
    return Place{base.addr, types_.u64(), false, base.user};
  }
  llvm::Value* addr = access(base.addr, path.steps);
  if (!addr) {
    problem("a bitfield that no 8-byte read holds", ei.type);
    return Place{base.addr, types_.u64(), false, base.user};
  }
  return Place{addr, path.type, base.btf, base.user, path.bitfield_bits != 0};
}

llvm::Value* ExprLowering::elementSize(const sema::Type* element) {
  if (element->isRecord() && !element->incomplete && !element->btf.file->user_space) {
    // A kernel struct may be another size on the kernel the program runs on.
    if (llvm::Value* size = typeSize(b_, core_, element->btf)) return size;
  }
  return b_.getInt64(element->kind == TypeKind::Void ? 1 : sizeOf(element));
}

Place ExprLowering::place(const ast::Expr& e) {
  current_ = e.range;
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
    const sema::Type* element = pointee(base_type);
    Val i = value(*ix.index);
    at(e);
    llvm::Value* offset = b_.CreateMul(i.v, elementSize(element));
    bool constant = llvm::isa<llvm::ConstantInt>(i.v);
    llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), base.addr, offset);
    // The verifier follows constant offsets into BTF objects, not variable ones (a
    // relocated element size is a constant by the time it verifies).
    return Place{addr, element, base.btf && constant, base.user};
  }
  if (e.kind == ast::ExprKind::Unary) {
    const auto& u = ast::as<ast::Unary>(e);
    Val p = value(*u.operand);
    return Place{toPtr(p.v), pointee(p.type), p.btf, p.user};
  }
  Val v = value(e);
  // An array as a value is its address (a tracepoint record's field, by its name).
  if (v.type->kind == TypeKind::Array) return Place{toPtr(v.v), v.type, v.btf, v.user};
  // A value with an address only in memory it was computed into.
  llvm::Value* tmp = slot(8);
  b_.CreateStore(v.v, tmp);
  return Place{tmp, v.type, true, false};
}

Val ExprLowering::load(const Place& p) {
  const sema::Type* type = p.type;
  if (type->kind == TypeKind::Array || type->isRecord()) {
    // An array or a record as a value is its address (see Val).
    return Val{b_.CreatePtrToInt(p.addr, b_.getInt64Ty()), type, p.btf, p.user};
  }
  if (p.bitfield) return loadBitfield(p);
  uint32_t size = std::min<uint32_t>(sizeOf(type), 8);
  llvm::Type* int_type = b_.getIntNTy(size * 8);
  llvm::Value* raw;
  // Direct loads where the verifier knows the memory, except of pointers: a pointer loaded
  // directly is one the verifier thinks may be NULL (`rcu_ptr_or_null_`) and allows no
  // arithmetic on, so the next member access could not be compiled; read as a number, it
  // can be followed with probe reads (0 for NULL).
  if (p.btf && !type->isPointer()) {
    raw = readOnce(int_type, p.addr);
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
  out.btf = false;  // see above: what a loaded pointer points at is read with probe reads
  out.user = p.user;
  return out;
}

// As libbpf's BPF_CORE_READ_BITFIELD(_PROBED): read the relocated byte size at the
// relocated offset into a u64, shift left to drop the bits above, then right (arithmetic
// for a signed field) to drop those below. Every number comes from the running kernel.
Val ExprLowering::loadBitfield(const Place& p) {
  llvm::Value* root = accessChainRoot(p.addr);
  llvm::Value* offset = fieldInfo(b_, p.addr, FieldInfo::ByteOffset);
  llvm::Value* size = fieldInfo(b_, p.addr, FieldInfo::ByteSize);
  llvm::Value* lshift = fieldInfo(b_, p.addr, FieldInfo::LShiftU64);
  llvm::Value* rshift = fieldInfo(b_, p.addr, FieldInfo::RShiftU64);
  llvm::Value* at = b_.CreateGEP(b_.getInt8Ty(), root, offset);
  llvm::Value* v;
  if (p.btf) {
    // Direct loads need a width known when the program is built: one per possible size;
    // the verifier sees the relocated size and explores only its branch.
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto* done = llvm::BasicBlock::Create(b_.getContext(), "bitfield", fn);
    auto* other = llvm::BasicBlock::Create(b_.getContext(), "bitfield.size", fn);
    llvm::SwitchInst* by_size = b_.CreateSwitch(size, other, 4);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(b_.getInt64Ty(), 5);
    for (uint32_t bytes : {1u, 2u, 4u, 8u}) {
      auto* block = llvm::BasicBlock::Create(b_.getContext(), "bitfield.load", fn, done);
      by_size->addCase(b_.getInt64(bytes), block);
      b_.SetInsertPoint(block);
      llvm::Value* loaded = b_.CreateZExt(b_.CreateLoad(b_.getIntNTy(bytes * 8), at), b_.getInt64Ty());
      b_.CreateBr(done);
      phi->addIncoming(loaded, block);
    }
    b_.SetInsertPoint(other);
    b_.CreateBr(done);
    phi->addIncoming(b_.getInt64(0), other);
    b_.SetInsertPoint(done);
    v = phi;
  } else {
    llvm::Value* tmp = slot(8);
    b_.CreateStore(b_.getInt64(0), tmp);
    // A relocated size of at most 8: within the slot, and a constant to the verifier.
    llvm::Value* bounded = b_.CreateAnd(size, b_.getInt64(15));
    bounded = b_.CreateSelect(b_.CreateICmpUGT(bounded, b_.getInt64(8)), b_.getInt64(8), bounded);
    Helper h = p.user ? Helper::ProbeReadUser : Helper::ProbeReadKernel;
    module_.callHelper(b_, h, b_.getInt64Ty(), {tmp, bounded, at});
    v = b_.CreateLoad(b_.getInt64Ty(), tmp);
  }
  v = b_.CreateShl(v, lshift);
  v = isSigned(p.type) ? b_.CreateAShr(v, rshift) : b_.CreateLShr(v, rshift);
  return Val{v, p.type};
}

Val ExprLowering::currentTaskChain(const std::vector<btf::MemberSteps>& members) {
  // Sema found every member (a kernel without one is its located error): none is looked up.
  if (members.empty()) return problem("a task member sema did not find", types_.u64());
  llvm::Value* addr = toPtr(module_.callHelper(b_, Helper::GetCurrentTask, b_.getInt64Ty(), {}));
  const btf::BtfType* type = nullptr;
  for (const btf::MemberSteps& member : members) {
    if (type && btf_is_ptr(type->get())) {
      // Through a pointer member: load it, then continue in what it points at.
      llvm::Value* tmp = slot(8);
      probeRead(tmp, 8, addr, false, false);
      addr = toPtr(b_.CreateLoad(b_.getInt64Ty(), tmp));
    }
    addr = access(addr, member.steps);
    if (!addr) return problem("a task member CO-RE cannot relocate", types_.u64());
    type = &member.type;
  }
  uint32_t size = static_cast<uint32_t>(std::min<uint64_t>(type->size(), 8));
  llvm::Value* tmp = slot(8);
  b_.CreateStore(b_.getInt64(0), tmp);
  probeRead(tmp, size, addr, false, false);
  return Val{b_.CreateLoad(b_.getInt64Ty(), tmp), types_.u64()};
}

}  // namespace kq::lower
