// `pcap("FILTER")` in code: the classic BPF libpcap compiled when the query was checked
// (compiler/sema/packet_filter.h), translated instruction by instruction into the program's
// own IR, not loaded as a program of its own. A and X are locals, M[] sixteen more; classic
// BPF jumps only forward, so its control flow is a DAG of branches and the verifier sees no
// loop. A load from the packet is a load from a window of its first bytes, copied once;
// one past the window is a probe read of its own; one past the packet's end fails the
// filter, as in classic BPF. Part of ExprLowering (expr_lowering.h).
#include <fmt/format.h>
#include <bpf/btf.h>
#include <llvm/IR/IntrinsicsBPF.h>

#include "compiler/lower/core_types.h"
#include "compiler/lower/expr_lowering.h"
#include "compiler/sema/packet_filter.h"

namespace kq::lower {
namespace {

namespace cbpf = sema::cbpf;
using sema::CbpfInsn;

/// Bytes of a packet copied once, from where its filter reads: an Ethernet header, an IPv4
/// header with the most options and a TCP header fit (a power of two: offsets are masked).
constexpr uint32_t kWindow = 128;

/// Where one run of a filter finds the packet's bytes.
struct PacketBytes {
  llvm::Value* start = nullptr;    // i64: the kernel address of its first byte
  llvm::Value* caplen = nullptr;   // i64: the bytes from `start` that can be loaded
  llvm::Value* wirelen = nullptr;  // i32: the packet's length from `start` (`len`)
  llvm::Value* window = nullptr;   // its first min(caplen, kWindow) bytes, copied
  llvm::Value* scratch = nullptr;  // 8 bytes for a load past the window
};

/// Emits one classic BPF program; each way out adds its verdict to `verdict` in `done`.
class CbpfEmitter {
 public:
  CbpfEmitter(llvm::IRBuilder<>& b, BpfModule& module, const PacketBytes& bytes,
              llvm::BasicBlock* done, llvm::PHINode* verdict)
      : b_(b), module_(module), bytes_(bytes), done_(done), verdict_(verdict),
        fn_(b.GetInsertBlock()->getParent()) {}

  /// Emits `insns` from the current block; returns the first opcode it does not know, or 0.
  uint16_t emit(const std::vector<CbpfInsn>& insns) {
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    a_ = entry.CreateAlloca(b_.getInt32Ty(), nullptr, "cbpf_a");
    x_ = entry.CreateAlloca(b_.getInt32Ty(), nullptr, "cbpf_x");
    mem_ = entry.CreateAlloca(llvm::ArrayType::get(b_.getInt32Ty(), cbpf::kMemWords), nullptr, "cbpf_m");
    b_.CreateStore(b_.getInt32(0), a_);
    b_.CreateStore(b_.getInt32(0), x_);
    for (uint32_t i = 0; i < cbpf::kMemWords; ++i) b_.CreateStore(b_.getInt32(0), word(i));
    reject_ = block("cbpf_reject");
    blocks_.clear();
    for (size_t i = 0; i < insns.size(); ++i) blocks_.push_back(block("cbpf_insn"));
    b_.CreateBr(blocks_.empty() ? reject_ : blocks_[0]);
    uint16_t unknown = 0;
    for (size_t i = 0; i < insns.size(); ++i) {
      b_.SetInsertPoint(blocks_[i]);
      if (instruction(insns[i], i, insns.size())) continue;
      if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(reject_);
      if (!unknown) unknown = insns[i].code;
    }
    b_.SetInsertPoint(reject_);
    finish(b_.getFalse());
    return unknown;
  }

 private:
  llvm::BasicBlock* block(const char* name) {
    return llvm::BasicBlock::Create(b_.getContext(), name, fn_);
  }
  llvm::Value* word(uint32_t k) {
    return b_.CreateConstGEP2_32(mem_->getAllocatedType(), mem_, 0, k);
  }
  llvm::Value* a() { return b_.CreateLoad(b_.getInt32Ty(), a_); }
  llvm::Value* x() { return b_.CreateLoad(b_.getInt32Ty(), x_); }

  /// Ends the current block with `match` (an i1) as the filter's verdict.
  void finish(llvm::Value* match) {
    verdict_->addIncoming(match, b_.GetInsertBlock());
    b_.CreateBr(done_);
  }

  /// The block instruction `i + 1 + skip` starts, or the reject block past the end (which
  /// libpcap's programs never jump to).
  llvm::BasicBlock* target(size_t i, uint32_t skip, size_t n) {
    size_t to = i + 1 + skip;
    return to < n ? blocks_[to] : reject_;
  }

  /// Emits instruction `i`; false for an opcode kq does not know (it then fails the filter).
  bool instruction(const CbpfInsn& in, size_t i, size_t n) {
    llvm::Value* k = b_.getInt32(in.k);
    auto next = [&] { b_.CreateBr(target(i, 0, n)); return true; };
    switch (cbpf::classOf(in.code)) {
      case cbpf::Ld:
      case cbpf::Ldx: {
        bool to_x = cbpf::classOf(in.code) == cbpf::Ldx;
        llvm::Value* v = nullptr;
        switch (cbpf::modeOf(in.code)) {
          case cbpf::Imm: v = k; break;
          case cbpf::Len: v = bytes_.wirelen; break;
          case cbpf::Mem:
            if (in.k >= cbpf::kMemWords) return false;
            v = b_.CreateLoad(b_.getInt32Ty(), word(in.k));
            break;
          case cbpf::Abs:
            if (to_x) return false;
            v = load(b_.getInt64(in.k), in.code);
            break;
          case cbpf::Ind:
            if (to_x) return false;
            v = load(b_.CreateAdd(b_.CreateZExt(x(), b_.getInt64Ty()), b_.getInt64(in.k)), in.code);
            break;
          case cbpf::Msh:
            // X = 4 * (P[k] & 0xf): an IPv4 header's length.
            if (!to_x) return false;
            v = b_.CreateShl(b_.CreateAnd(load(b_.getInt64(in.k), cbpf::Byte), 0xf), 2);
            break;
          default: return false;
        }
        if (!v) return false;
        b_.CreateStore(v, to_x ? x_ : a_);
        return next();
      }
      case cbpf::St:
      case cbpf::Stx:
        if (in.k >= cbpf::kMemWords) return false;
        b_.CreateStore(cbpf::classOf(in.code) == cbpf::St ? a() : x(), word(in.k));
        return next();
      case cbpf::Alu: return alu(in) && next();
      case cbpf::Jmp: {
        if (cbpf::opOf(in.code) == cbpf::Ja) {
          b_.CreateBr(target(i, in.k, n));
          return true;
        }
        llvm::Value* lhs = a();
        llvm::Value* rhs = cbpf::sourceOf(in.code) == cbpf::X ? x() : k;
        llvm::Value* taken = nullptr;
        switch (cbpf::opOf(in.code)) {
          case cbpf::Jeq: taken = b_.CreateICmpEQ(lhs, rhs); break;
          case cbpf::Jgt: taken = b_.CreateICmpUGT(lhs, rhs); break;
          case cbpf::Jge: taken = b_.CreateICmpUGE(lhs, rhs); break;
          case cbpf::Jset: taken = b_.CreateICmpNE(b_.CreateAnd(lhs, rhs), b_.getInt32(0)); break;
          default: b_.CreateBr(reject_); return false;
        }
        b_.CreateCondBr(taken, target(i, in.jt, n), target(i, in.jf, n));
        return true;
      }
      case cbpf::Ret: {
        // The bytes to capture: the packet matches unless that is 0.
        switch (cbpf::retSourceOf(in.code)) {
          case cbpf::K: finish(b_.getInt1(in.k != 0)); return true;
          case cbpf::A: finish(b_.CreateICmpNE(a(), b_.getInt32(0))); return true;
          default: b_.CreateBr(reject_); return false;
        }
      }
      case cbpf::Misc:
        switch (cbpf::miscOpOf(in.code)) {
          case cbpf::Tax: b_.CreateStore(a(), x_); return next();
          case cbpf::Txa: b_.CreateStore(x(), a_); return next();
          default: b_.CreateBr(reject_); return false;
        }
      default: break;
    }
    b_.CreateBr(reject_);
    return false;
  }

  /// A = A op (K or X), 32 bits unsigned; division by an X of 0 fails the filter, and a
  /// shift by 32 or more makes 0, as libpcap's own interpreter does.
  bool alu(const CbpfInsn& in) {
    llvm::Value* lhs = a();
    llvm::Value* rhs = cbpf::sourceOf(in.code) == cbpf::X ? x() : b_.getInt32(in.k);
    auto nonzero = [&] {
      llvm::BasicBlock* go = block("cbpf_divide");
      b_.CreateCondBr(b_.CreateICmpNE(rhs, b_.getInt32(0)), go, reject_);
      b_.SetInsertPoint(go);
    };
    auto shift = [&](llvm::Value* shifted) {
      return b_.CreateSelect(b_.CreateICmpULT(rhs, b_.getInt32(32)), shifted, b_.getInt32(0));
    };
    llvm::Value* v = nullptr;
    switch (cbpf::opOf(in.code)) {
      case cbpf::Add: v = b_.CreateAdd(lhs, rhs); break;
      case cbpf::Sub: v = b_.CreateSub(lhs, rhs); break;
      case cbpf::Mul: v = b_.CreateMul(lhs, rhs); break;
      case cbpf::Div: nonzero(); v = b_.CreateUDiv(lhs, rhs); break;
      case cbpf::Mod: nonzero(); v = b_.CreateURem(lhs, rhs); break;
      case cbpf::Or: v = b_.CreateOr(lhs, rhs); break;
      case cbpf::And: v = b_.CreateAnd(lhs, rhs); break;
      case cbpf::Xor: v = b_.CreateXor(lhs, rhs); break;
      case cbpf::Lsh: v = shift(b_.CreateShl(lhs, b_.CreateAnd(rhs, 31))); break;
      case cbpf::Rsh: v = shift(b_.CreateLShr(lhs, b_.CreateAnd(rhs, 31))); break;
      case cbpf::Neg: v = b_.CreateNeg(lhs); break;
      default: b_.CreateBr(reject_); return false;
    }
    b_.CreateStore(v, a_);
    return true;
  }

  /// P[offset : size] in network order as an i32 (`code` says the size); a load past the
  /// packet's bytes fails the filter. Within the window, a load from the copy: the offset
  /// goes through `bpf.passthrough` before it is masked, so that LLVM, which knows it is
  /// below kWindow here, keeps the mask the verifier needs to know that too.
  llvm::Value* load(llvm::Value* offset, uint16_t code) {
    uint32_t size = cbpf::sizeOf(code) == cbpf::Byte ? 1 : cbpf::sizeOf(code) == cbpf::Half ? 2 : 4;
    llvm::Value* end = b_.CreateAdd(offset, b_.getInt64(size));
    llvm::BasicBlock* in_packet = block("cbpf_in_packet");
    b_.CreateCondBr(b_.CreateICmpULE(end, bytes_.caplen), in_packet, reject_);
    b_.SetInsertPoint(in_packet);
    llvm::BasicBlock* in_window = block("cbpf_in_window");
    llvm::BasicBlock* past_window = block("cbpf_past_window");
    llvm::BasicBlock* loaded = block("cbpf_loaded");
    b_.CreateCondBr(b_.CreateICmpULE(end, b_.getInt64(kWindow)), in_window, past_window);

    b_.SetInsertPoint(in_window);
    llvm::Function* passthrough = llvm::Intrinsic::getDeclaration(
        fn_->getParent(), llvm::Intrinsic::bpf_passthrough, {b_.getInt64Ty(), b_.getInt64Ty()});
    llvm::Value* opaque = b_.CreateCall(passthrough, {b_.getInt32(0), offset});
    llvm::Value* at = b_.CreateGEP(b_.getInt8Ty(), bytes_.window, b_.CreateAnd(opaque, kWindow - 1));
    llvm::Value* from_window = bigEndian(at, size);
    llvm::BasicBlock* window_end = b_.GetInsertBlock();
    b_.CreateBr(loaded);

    b_.SetInsertPoint(past_window);
    llvm::Value* src = b_.CreateIntToPtr(b_.CreateAdd(bytes_.start, offset), b_.getPtrTy());
    llvm::Value* failed = module_.callHelper(b_, Helper::ProbeReadKernel, b_.getInt64Ty(),
                                             {bytes_.scratch, b_.getInt64(size), src});
    llvm::Value* from_read = bigEndian(bytes_.scratch, size);
    llvm::BasicBlock* read_end = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpEQ(failed, b_.getInt64(0)), loaded, reject_);

    b_.SetInsertPoint(loaded);
    llvm::PHINode* v = b_.CreatePHI(b_.getInt32Ty(), 2);
    v->addIncoming(from_window, window_end);
    v->addIncoming(from_read, read_end);
    return v;
  }

  /// `size` bytes at `p`, most significant first.
  llvm::Value* bigEndian(llvm::Value* p, uint32_t size) {
    llvm::Value* v = b_.getInt32(0);
    for (uint32_t i = 0; i < size; ++i) {
      llvm::Value* byte = b_.CreateLoad(b_.getInt8Ty(), b_.CreateGEP(b_.getInt8Ty(), p, b_.getInt64(i)));
      v = b_.CreateOr(b_.CreateShl(v, 8), b_.CreateZExt(byte, b_.getInt32Ty()));
    }
    return v;
  }

  llvm::IRBuilder<>& b_;
  BpfModule& module_;
  const PacketBytes& bytes_;
  llvm::BasicBlock* done_;
  llvm::PHINode* verdict_;
  llvm::Function* fn_;
  llvm::AllocaInst* a_ = nullptr;
  llvm::AllocaInst* x_ = nullptr;
  llvm::AllocaInst* mem_ = nullptr;
  llvm::BasicBlock* reject_ = nullptr;
  std::vector<llvm::BasicBlock*> blocks_;
};

}  // namespace

llvm::Value* ExprLowering::packetMember(const Val& skb, const btf::MemberSteps& member, llvm::Value* tmp) {
  llvm::Value* addr = access(toPtr(skb.v), member.steps);
  uint64_t size = member.type.size();
  if (!addr) return nullptr;
  if (skb.btf && btf_is_int(member.type.get())) {
    // Where the verifier knows the skb (tp_btf, fentry): a direct load, as member_lowering
    // does; pointers (`head`, `data`) are still read, so that they can be added to.
    llvm::Value* v = b_.CreateLoad(b_.getIntNTy(static_cast<unsigned>(size * 8)), addr);
    return b_.CreateZExt(v, b_.getInt64Ty());
  }
  b_.CreateStore(b_.getInt64(0), tmp);
  probeRead(tmp, static_cast<uint32_t>(size), addr, false, false);
  return b_.CreateLoad(b_.getInt64Ty(), tmp);
}

// Where the bytes start, as pwru decides: at the MAC header when the skb has one before
// its network header, else (a packet made here, before its link layer) at the network
// header, with the filter compiled for DLT_RAW. The bytes that can be loaded are the linear
// data from there (up to `tail`); `len` is `skb->len` counted from there.
Val ExprLowering::packetFilter(const ast::Call& c, const sema::ExprInfo& ei) {
  const sema::PacketFilter& filter = *ei.packet_filter;
  Val skb = filter.skb_arg ? arg(*filter.skb_arg, argType(*filter.skb_arg)) : value(*c.args[0]);
  at(c);
  llvm::Value* word = slot(8);
  // Sema found the members (PacketFilter::kMembers): none is looked up here.
  if (filter.members.size() != std::size(sema::PacketFilter::kMembers)) {
    return problem("`pcap` without the members sema finds", ei.type);
  }
  llvm::Value* head = packetMember(skb, filter.members[0], word);
  llvm::Value* data = packetMember(skb, filter.members[1], word);
  llvm::Value* len = packetMember(skb, filter.members[2], word);
  llvm::Value* tail = packetMember(skb, filter.members[3], word);
  llvm::Value* mac = packetMember(skb, filter.members[4], word);
  llvm::Value* network = packetMember(skb, filter.members[5], word);
  if (!head || !data || !len || !tail || !mac || !network) {
    return problem("a `struct sk_buff` member CO-RE cannot relocate", ei.type);
  }
  // sk_buff_data_t is an offset on 64-bit kernels and a pointer elsewhere.
  if (filter.members[3].type.size() == 8) tail = b_.CreateSub(tail, head);
  llvm::Value* has_mac = b_.CreateAnd(b_.CreateICmpNE(mac, b_.getInt64(0xffff)),
                                      b_.CreateICmpULT(mac, network));
  llvm::Value* from = b_.CreateSelect(has_mac, mac, network);
  PacketBytes bytes;
  bytes.start = b_.CreateAdd(head, from);
  llvm::Value* wirelen = b_.CreateSub(b_.CreateAdd(len, b_.CreateSub(data, head)), from);
  bytes.wirelen = b_.CreateTrunc(wirelen, b_.getInt32Ty());
  llvm::Value* linear = b_.CreateSelect(b_.CreateICmpUGT(tail, from), b_.CreateSub(tail, from),
                                        b_.getInt64(0));
  llvm::Value* wire = b_.CreateZExt(bytes.wirelen, b_.getInt64Ty());
  bytes.caplen = b_.CreateSelect(b_.CreateICmpULT(wire, linear), wire, linear);
  bytes.window = slot(kWindow + 8);  // + 8: a masked offset below kWindow, plus 4 bytes
  bytes.scratch = word;
  llvm::Value* copy = b_.CreateSelect(b_.CreateICmpULT(bytes.caplen, b_.getInt64(kWindow)),
                                      bytes.caplen, b_.getInt64(kWindow));
  llvm::Value* failed = module_.callHelper(b_, Helper::ProbeReadKernel, b_.getInt64Ty(),
                                           {bytes.window, copy, toPtr(bytes.start)});

  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "pcap_done", fn);
  auto* copied = llvm::BasicBlock::Create(b_.getContext(), "pcap_copied", fn);
  auto* from_mac = llvm::BasicBlock::Create(b_.getContext(), "pcap_from_mac", fn);
  auto* from_network = llvm::BasicBlock::Create(b_.getContext(), "pcap_from_network", fn);
  llvm::IRBuilder<> at_done(done);
  llvm::PHINode* verdict = at_done.CreatePHI(b_.getInt1Ty(), 4, "pcap_match");
  verdict->addIncoming(b_.getFalse(), b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpEQ(failed, b_.getInt64(0)), copied, done);
  b_.SetInsertPoint(copied);
  b_.CreateCondBr(has_mac, from_mac, from_network);
  b_.SetInsertPoint(from_mac);
  uint16_t unknown = CbpfEmitter(b_, module_, bytes, done, verdict).emit(filter.from_mac);
  b_.SetInsertPoint(from_network);
  uint16_t unknown_raw = CbpfEmitter(b_, module_, bytes, done, verdict).emit(filter.from_network);
  b_.SetInsertPoint(done);
  if (unknown || unknown_raw) {
    return problem(fmt::format("libpcap compiled this filter into an instruction kq does not "
                               "know (opcode {:#x})", unknown ? unknown : unknown_raw), ei.type);
  }
  return Val{b_.CreateZExt(verdict, b_.getInt64Ty()), ei.type};
}

}  // namespace kq::lower
