// A probe's arguments and return value, wherever the program being built finds them: the
// trampoline's u64 array (fentry, tp_btf), `struct pt_regs` and the stack (kprobes,
// uprobes; see pt_regs.h), a classic tracepoint's record, or what the entry program
// stashed (kretprobes, syscall exits). Part of ExprLowering (expr_lowering.h).
#include "compiler/lower/expr_lowering.h"
#include "host/netfilter.h"

#include <bpf/btf.h>

#include <fmt/format.h>

namespace kq::lower {

Val ExprLowering::arg(uint32_t index, const sema::Type* type) {
  llvm::Value* ctx = args_.ctx;
  if (args_.packet && index == 0 && args_.packet->skb) {
    Val out = extend(args_.packet->skb, type);
    // A tracepoint's is a BTF pointer (direct loads); a kprobe's is read with
    // bpf_probe_read_kernel.
    // An XDP program's skb was found in a map, and nft_do_chain's read from its pkt: a
    // number to the verifier.
    out.btf = args_.kind == ArgAccess::Kind::CtxArray && !args_.packet->at_return && !args_.packet->xdp &&
              !args_.packet->netfilter;
    return out;
  }
  switch (args_.kind) {
    case ArgAccess::Kind::CtxArray: {
      uint32_t slot = index < args_.arg_positions.size() ? args_.arg_positions[index] : index;
      if (auto read = args_.read_slots.find(slot); read != args_.read_slots.end()) {
        Val out = extend(read->second, type);
        out.btf = type->isPointer();
        return out;
      }
      llvm::Value* addr = b_.CreateGEP(b_.getInt64Ty(), ctx, b_.getInt64(slot));
      Val out = extend(readOnce(b_.getInt64Ty(), addr), type);
      out.btf = type->isPointer();
      return out;
    }
    case ArgAccess::Kind::PtRegs:
      return registerArg(index, type);
    case ArgAccess::Kind::Usdt:
      return usdtArg(index, type);
    case ArgAccess::Kind::TracepointRecord: {
      const host::TracepointField* f = recordField(index);
      if (!f) return problem(fmt::format("the tracepoint record has no field for argument {}", index), type);
      if (type->kind == sema::TypeKind::Array) {
        // An array field as a value is its address in the record (see Val), which the
        // verifier lets a program load from at constant offsets.
        llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(f->offset));
        return Val{b_.CreatePtrToInt(addr, b_.getInt64Ty()), type, true, false};
      }
      uint32_t size = f->size == 1 || f->size == 2 || f->size == 4 ? f->size : 8;
      llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(f->offset));
      llvm::Value* raw = readOnce(b_.getIntNTy(size * 8), addr);
      llvm::Value* wide = size == 8 ? raw
                          : f->is_signed ? b_.CreateSExt(raw, b_.getInt64Ty())
                                         : b_.CreateZExt(raw, b_.getInt64Ty());
      Val out = extend(wide, type);
      out.user = args_.user_args && type->isPointer();
      return out;
    }
    case ArgAccess::Kind::SyscallRegs: {
      const std::vector<RegisterSlot>& slots = ptRegsLayout(args_.arch).syscall_args;
      if (index >= slots.size()) {
        return problem(fmt::format("a system call has no argument {}", index + 1), type);
      }
      Val out = extend(readRegister(slots[index], syscallRegs()), type);
      out.user = args_.user_args && type->isPointer();
      return out;
    }
    case ArgAccess::Kind::Stash: {
      if (index >= args_.stashed.size()) {
        return problem(fmt::format("argument {} is not saved at entry for the exit program "
                                   "(only the first {} are)",
                                   index + 1, args_.stashed.size()),
                       type);
      }
      Val out = extend(args_.stashed[index], type);
      out.user = args_.user_args;
      return out;
    }
    case ArgAccess::Kind::None:
      break;
  }
  return Val{b_.getInt64(0), type};
}

// Arguments in registers, then (at function entry) on the stack, 8 bytes each.
Val ExprLowering::registerArg(uint32_t index, const sema::Type* type) {
  const PtRegsLayout& layout = ptRegsLayout(args_.arch);
  uint32_t position = index < args_.arg_positions.size() ? args_.arg_positions[index] : index;
  llvm::Value* v;
  if (position < layout.args.size()) {
    v = readRegister(layout.args[position]);
  } else {
    uint32_t offset = layout.first_stack_arg + 8 * (position - static_cast<uint32_t>(layout.args.size()));
    llvm::Value* sp = readRegister(layout.sp);
    llvm::Value* tmp = slot(8);
    b_.CreateStore(b_.getInt64(0), tmp);
    // A uprobe's stack is the process's memory.
    probeRead(tmp, 8, b_.CreateAdd(sp, b_.getInt64(offset)), args_.user_args, false);
    v = b_.CreateLoad(b_.getInt64Ty(), tmp);
  }
  Val out = extend(v, type);
  out.user = args_.user_args;
  return out;
}

// Where a USDT site's note says: a register's low bytes, a constant, or memory at registers
// plus a displacement (%rip-relative: the site's address, less where the note says it is,
// is where the file is loaded).
Val ExprLowering::usdtArg(uint32_t index, const sema::Type* type) {
  const host::UsdtSite& site = *args_.usdt;
  if (index >= site.args.size()) return problem(fmt::format("the USDT site has no argument {}", index), type);
  const host::UsdtArg& a = site.args[index];
  auto reg = [&](const std::string& name) -> llvm::Value* {
    std::optional<RegisterSlot> slot = ptRegsMember(args_.arch, name);
    return slot ? readRegister(*slot) : nullptr;
  };
  llvm::Value* v = nullptr;
  switch (a.kind) {
    case host::UsdtArg::Kind::Constant:
      v = b_.getInt64(static_cast<uint64_t>(a.value));
      break;
    case host::UsdtArg::Kind::Register:
      v = reg(a.reg);
      if (v && a.high_byte) v = b_.CreateLShr(v, b_.getInt64(8));
      break;
    case host::UsdtArg::Kind::Memory: {
      llvm::Value* address = b_.getInt64(static_cast<uint64_t>(a.value));
      if (!a.reg.empty()) {
        llvm::Value* base = reg(a.reg);
        if (!base) break;
        if (a.reg == "ip") base = b_.CreateSub(base, b_.getInt64(site.address));
        address = b_.CreateAdd(address, base);
      }
      if (!a.index.empty()) {
        llvm::Value* index_value = reg(a.index);
        if (!index_value) break;
        address = b_.CreateAdd(address, b_.CreateMul(index_value, b_.getInt64(a.scale)));
      }
      llvm::Value* tmp = slot(8);
      b_.CreateStore(b_.getInt64(0), tmp);
      probeRead(tmp, a.size, address, true, false);
      v = b_.CreateLoad(b_.getInt64Ty(), tmp);
      break;
    }
  }
  if (!v) return problem(fmt::format("USDT argument `{}` names a register kq cannot read here", a.text), type);
  if (a.size < 8) {
    v = b_.CreateTrunc(v, b_.getIntNTy(8 * a.size));
    v = a.is_signed ? b_.CreateSExt(v, b_.getInt64Ty()) : b_.CreateZExt(v, b_.getInt64Ty());
  }
  Val out = extend(v, type);
  out.user = true;
  return out;
}

namespace {

/// Bits `shift`.. of a cookie, as one byte.
llvm::Value* cookieByte(llvm::IRBuilder<>& b, llvm::Value* cookie, uint32_t shift) {
  return b.CreateAnd(b.CreateLShr(cookie, b.getInt64(shift)), b.getInt64(0xff));
}

}  // namespace

/// One of the argument registers, chosen at run time by `position` (a packet kprobe's
/// cookie says where its function takes the skb): six loads and selects, no branches.
llvm::Value* ExprLowering::registerAt(llvm::Value* position) {
  const PtRegsLayout& layout = ptRegsLayout(args_.arch);
  // Volatile: LLVM would otherwise fold the selects of loads into one load from a chosen
  // offset of the context, which the verifier refuses ("dereference of modified ctx ptr").
  auto read = [&](const RegisterSlot& reg) {
    llvm::Value* v = readRegister(reg);
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(v)) load->setVolatile(true);
    return v;
  };
  llvm::Value* v = read(layout.args[0]);
  for (uint32_t i = 1; i < layout.args.size(); ++i) {
    v = b_.CreateSelect(b_.CreateICmpEQ(position, b_.getInt64(i)), read(layout.args[i]), v);
  }
  if (!args_.packet || !args_.packet->stack_args) return v;
  // Past the registers: the stack slot, read only for the functions that need it.
  llvm::BasicBlock* here = b_.GetInsertBlock();
  llvm::Function* fn = here->getParent();
  auto* stack = llvm::BasicBlock::Create(b_.getContext(), "stack_arg", fn);
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "arg_read", fn);
  auto registers = static_cast<uint64_t>(layout.args.size());
  llvm::Value* tmp = slot(8);
  b_.CreateStore(b_.getInt64(0), tmp);
  b_.CreateCondBr(b_.CreateICmpUGE(position, b_.getInt64(registers)), stack, done);
  b_.SetInsertPoint(stack);
  llvm::Value* offset = b_.CreateAdd(b_.getInt64(layout.first_stack_arg),
                                     b_.CreateMul(b_.CreateSub(position, b_.getInt64(registers)), b_.getInt64(8)));
  probeRead(tmp, 8, b_.CreateAdd(readRegister(layout.sp), offset), false, false);
  llvm::BasicBlock* from_stack = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  llvm::PHINode* which = b_.CreatePHI(b_.getInt1Ty(), 2);
  which->addIncoming(b_.getFalse(), here);
  which->addIncoming(b_.getTrue(), from_stack);
  return b_.CreateSelect(which, b_.CreateLoad(b_.getInt64Ty(), tmp), v);
}

llvm::Value* ExprLowering::packetSkb() {
  if (args_.packet->skb) return args_.packet->skb;
  if (args_.packet->cookie) return registerAt(cookieByte(b_, args_.packet->cookie, kPacketCookieSkbShift));
  uint32_t slot = args_.arg_positions.empty() ? 0 : args_.arg_positions[0];
  return readOnce(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), args_.ctx, b_.getInt64(slot)));
}

llvm::Value* ExprLowering::packetSite() {
  if (args_.packet->cookie) return b_.CreateAnd(args_.packet->cookie, b_.getInt64(0xffffffff));
  return b_.getInt64(args_.packet->site);
}

llvm::Value* ExprLowering::packetReason() {
  if (args_.packet->at_return) return b_.getInt64(0);  // the reason was at entry
  if (args_.packet->cookie) {
    llvm::Value* plus_one = cookieByte(b_, args_.packet->cookie, kPacketCookieReasonShift);
    llvm::Value* reason = registerAt(b_.CreateSub(plus_one, b_.getInt64(1)));
    reason = b_.CreateAnd(reason, b_.getInt64(0xffffffff));  // an enum: 32 bits
    return b_.CreateSelect(b_.CreateICmpEQ(plus_one, b_.getInt64(0)), b_.getInt64(0), reason);
  }
  if (!args_.packet->reason_slot) return b_.getInt64(0);
  llvm::Value* addr = b_.CreateGEP(b_.getInt64Ty(), args_.ctx, b_.getInt64(*args_.packet->reason_slot));
  return b_.CreateAnd(b_.CreateLoad(b_.getInt64Ty(), addr), b_.getInt64(0xffffffff));
}

llvm::Value* ExprLowering::packetFrees() {
  if (args_.packet->at_return) return b_.getFalse();
  if (args_.packet->cookie) {
    return b_.CreateICmpNE(b_.CreateAnd(args_.packet->cookie, b_.getInt64(kPacketCookieFrees)), b_.getInt64(0));
  }
  return b_.getInt1(args_.packet->frees);
}

llvm::Value* ExprLowering::packetUnseen() {
  if (args_.packet->at_return) return b_.getFalse();
  if (args_.packet->cookie) {
    return b_.CreateICmpNE(b_.CreateAnd(args_.packet->cookie, b_.getInt64(kPacketCookieUnseen)), b_.getInt64(0));
  }
  return b_.getInt1(args_.packet->unseen);
}

llvm::Value* ExprLowering::packetReleases() {
  if (args_.packet->at_return) return b_.getFalse();
  if (args_.packet->cookie) {
    return b_.CreateICmpNE(b_.CreateAnd(args_.packet->cookie, b_.getInt64(kPacketCookieReleases)), b_.getInt64(0));
  }
  return b_.getInt1(args_.packet->releases);
}

llvm::Value* ExprLowering::packetJourney() {
  return args_.packet->journey ? args_.packet->journey : packetSkb();
}

llvm::Value* ExprLowering::packetHead() {
  if (!args_.packet->identity) return nullptr;
  return packetMember(Val{packetSkb()}, args_.packet->identity->head, slot(8));
}

llvm::Value* ExprLowering::packetDataUsers(llvm::Value* head) {
  const sema::PacketIdentity& identity = *args_.packet->identity;
  llvm::Value* end = packetMember(Val{packetSkb()}, identity.end, slot(8));
  if (!end) return nullptr;
  // `end` is an offset from `head` where the kernel keeps offsets (64-bit), else a pointer.
  llvm::Value* shared_info = identity.end.type.size() == 8 ? end : b_.CreateAdd(head, end);
  llvm::Value* count = packetMember(Val{shared_info}, identity.dataref, slot(8));
  return count ? b_.CreateAnd(count, b_.getInt64(0xffff)) : nullptr;
}

llvm::Value* ExprLowering::packetCloned() {
  llvm::Value* at = access(toPtr(packetSkb()), args_.packet->identity->cloned.steps);
  if (!at) return b_.getFalse();
  Val bit = loadBitfield(Place{at, types_.u64(), false, false, true});
  return b_.CreateICmpNE(bit.v, b_.getInt64(0));
}

llvm::Value* ExprLowering::packetCopyPosition() {
  if (!args_.packet->cookie || args_.packet->at_return) return nullptr;
  return cookieByte(b_, args_.packet->cookie, kPacketCookieCopyShift);
}

llvm::Value* ExprLowering::packetCopied(llvm::Value* position) {
  return registerAt(b_.CreateSub(position, b_.getInt64(1)));
}

llvm::Value* ExprLowering::packetVerdict() {
  const sema::NetfilterHookAccess* netfilter = args_.packet->netfilter;
  if (!args_.packet->program_type && !netfilter) return b_.getInt64(0);
  llvm::Value* ret = b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), args_.ctx, b_.getInt64(args_.return_slot)));
  if (!netfilter) {
    ret = b_.CreateAnd(ret, b_.getInt64(0xffffffff));
    return b_.CreateOr(ret, b_.getInt64(uint64_t{args_.packet->program_type} << 32));
  }
  // host::netfilterVerdictWord: the verdict (NF_VERDICT_MASK: a drop's errno is above it),
  // and the family and hook of the packet's `state`.
  llvm::Value* state = packetMember(Val{netfilterPacketInfo()}, netfilter->state, slot(8));
  llvm::Value* hook = state ? packetMember(Val{state}, netfilter->hook, slot(8)) : nullptr;
  llvm::Value* pf = state ? packetMember(Val{state}, netfilter->pf, slot(8)) : nullptr;
  if (!hook || !pf) return b_.getInt64(0);
  llvm::Value* where = b_.CreateOr(b_.CreateShl(b_.CreateAnd(pf, b_.getInt64(0xff)), b_.getInt64(56)),
                                   b_.CreateShl(b_.CreateAnd(hook, b_.getInt64(0xff)), b_.getInt64(48)));
  // A drop that freed the packet already is a drop.
  llvm::Value* verdict = b_.CreateSelect(netfilterDropped(), b_.getInt64(host::kNfDrop), b_.CreateAnd(ret, b_.getInt64(0xff)));
  verdict = b_.CreateOr(verdict, b_.getInt64(uint64_t{host::kNetfilterVerdict} << 32));
  return b_.CreateOr(verdict, where);
}

llvm::Value* ExprLowering::netfilterDropped() {
  llvm::Value* ret = b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), args_.ctx, b_.getInt64(args_.return_slot)));
  ret = b_.CreateAnd(ret, b_.getInt64(0xffffffff));
  llvm::Value* stolen = b_.CreateICmpEQ(b_.CreateAnd(ret, b_.getInt64(0xff)), b_.getInt64(host::kNfStolen));
  return b_.CreateAnd(stolen, b_.CreateICmpNE(b_.CreateLShr(ret, b_.getInt64(16)), b_.getInt64(0)));
}

llvm::Value* ExprLowering::netfilterPacketInfo() {
  return b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), args_.ctx, b_.getInt64(args_.packet->netfilter->pkt)));
}

llvm::Value* ExprLowering::netfilterSkb() {
  llvm::Value* skb = packetMember(Val{netfilterPacketInfo()}, args_.packet->netfilter->skb, slot(8));
  return skb ? skb : b_.getInt64(0);
}

llvm::Value* ExprLowering::xdpHardStart() {
  const sema::PacketIdentity* identity = args_.packet->identity;
  if (!identity || !identity->xdp_hard_start) return nullptr;
  llvm::Value* xdp = b_.CreateLoad(b_.getInt64Ty(), args_.ctx);
  return packetMember(Val{xdp}, *identity->xdp_hard_start, slot(8));
}

llvm::Value* ExprLowering::syscallRegs() {
  return b_.CreateIntToPtr(b_.CreateLoad(b_.getInt64Ty(), args_.ctx), b_.getPtrTy());
}

llvm::Value* ExprLowering::syscallNumber(bool at_exit) {
  if (at_exit) return readRegister(ptRegsLayout(args_.arch).syscall_nr, syscallRegs());
  return b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt64Ty(), args_.ctx, b_.getInt64(1)));
}

llvm::Value* ExprLowering::compatSyscall() {
  constexpr uint32_t kTsCompat = 0x0002;  // arch/x86/include/asm/thread_info.h
  if (args_.compat_status.size() != 2) {
    problems_.push_back({current_, "a raw_syscalls program without thread_info.status"});
    return b_.getFalse();
  }
  // A tp_btf program: the task is a BTF pointer, read with plain (CO-RE) loads.
  llvm::Value* addr = toPtr(module_.callHelper(b_, Helper::GetCurrentTaskBtf, b_.getInt64Ty(), {}));
  addr = access(access(addr, args_.compat_status[0].steps), args_.compat_status[1].steps);
  if (!addr) return b_.getFalse();
  llvm::Value* v = b_.CreateLoad(b_.getInt32Ty(), addr);
  return b_.CreateICmpNE(b_.CreateAnd(v, b_.getInt32(kTsCompat)), b_.getInt32(0));
}

llvm::Value* ExprLowering::readRegister(const RegisterSlot& reg, llvm::Value* regs_at) {
  llvm::Value* ctx = regs_at ? regs_at : args_.ctx;
  std::optional<btf::BtfType> regs = btf_ ? btf_->findStruct("pt_regs") : std::nullopt;
  std::optional<BtfMemberPath> path;
  if (regs) path = findBtfMember(*regs, reg.member);
  llvm::Value* addr = path ? access(ctx, path->steps) : nullptr;
  if (addr && reg.is_array) {
    // An element of `regs[]`: u64s, whatever the kernel.
    addr = btf_is_array(path->type.get())
               ? b_.CreateGEP(b_.getInt8Ty(), addr, b_.getInt64(8 * reg.element))
               : nullptr;
  }
  if (!addr) addr = b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(reg.offset));
  return b_.CreateLoad(b_.getInt64Ty(), addr);
}

const host::TracepointField* ExprLowering::recordField(uint32_t index) const {
  // Arguments count the record's fields, without a syscall record's `__syscall_nr`.
  if (!args_.format) return nullptr;
  uint32_t seen = 0;
  for (const host::TracepointField& f : args_.format->fields) {
    if (args_.skip_syscall_nr && f.name == "__syscall_nr") continue;
    if (seen++ == index) return &f;
  }
  return nullptr;
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
  llvm::Value* v = nullptr;
  switch (args_.ret) {
    case ArgAccess::Ret::CtxSlot:
      v = b_.CreateLoad(b_.getInt64Ty(),
                        b_.CreateGEP(b_.getInt64Ty(), ctx, b_.getInt64(args_.return_slot)));
      break;
    case ArgAccess::Ret::Regs:
      v = readRegister(ptRegsLayout(args_.arch).ret);
      break;
    case ArgAccess::Ret::SyscallExit: {
      // `long ret` of the sys_exit record, where its tracefs format puts it.
      uint32_t offset = args_.syscall_ret_offset.value_or(16);
      v = b_.CreateLoad(b_.getInt64Ty(), b_.CreateGEP(b_.getInt8Ty(), ctx, b_.getInt64(offset)));
      break;
    }
    case ArgAccess::Ret::None:
      return Val{b_.getInt64(0), type};
  }
  Val out = extend(v, type);
  // A uprobe's or a syscall's return value is an address in the process if it is one at
  // all (uprobes have no types: `str(return)` of a plain 64-bit value reads user memory).
  out.user = args_.user_args;
  return out;
}

Val ExprLowering::problem(std::string message, const sema::Type* type) {
  problems_.push_back({current_, std::move(message)});
  return Val{b_.getInt64(0), type ? type : types_.u64()};
}

}  // namespace kq::lower
