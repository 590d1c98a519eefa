// Builtins in code, one case per descriptor id (compiler/sema/builtins): a builtin sema
// knows and this file does not handle fails to compile here (-Werror=switch), so adding one
// cannot silently print garbage. Part of ExprLowering (expr_lowering.h).
#include "compiler/lower/expr_lowering.h"

#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {

using sema::BuiltinFn;
using sema::BuiltinVar;

Val ExprLowering::builtin(const ast::Expr& e, const sema::BuiltinVariable& variable) {
  const sema::Type* type = info(e).type;
  llvm::Value* v = b_.getInt64(0);
  switch (variable.id) {
    case BuiltinVar::Computed: {
      const sema::ValueRecipe& recipe = variable.recipe;
      if (!recipe.task_path.empty()) return extend(currentTaskChain(info(e).task_members).v, type);
      v = module_.callHelper(b_, static_cast<Helper>(recipe.helper), b_.getInt64Ty(), {});
      if (recipe.shift) v = b_.CreateLShr(v, b_.getInt64(recipe.shift));
      if (recipe.mask != ~0ull) v = b_.CreateAnd(v, b_.getInt64(recipe.mask));
      break;
    }
    case BuiltinVar::Func:
      // The traced function's address where one program serves many; else text.
      if (args_.func_ip) v = module_.callHelper(b_, Helper::GetFuncIp, b_.getInt64Ty(), {args_.ctx});
      break;
    case BuiltinVar::Duration:
      if (args_.entry_ns) {
        v = b_.CreateSub(module_.callHelper(b_, Helper::KtimeGetNs, b_.getInt64Ty(), {}), args_.entry_ns);
      }
      break;
    case BuiltinVar::Elapsed: {
      // Now less the start the loader wrote in the object's one-word map; 0 before it did.
      llvm::GlobalVariable* start = args_.session_start ? args_.session_start() : nullptr;
      if (!start) break;
      llvm::Value* key = slot(4);
      b_.CreateStore(b_.getInt32(0), key);
      llvm::Value* entry = module_.callHelper(b_, Helper::MapLookupElem, b_.getPtrTy(), {start, key});
      llvm::Value* zero = slot(8);
      b_.CreateStore(b_.getInt64(0), zero);
      llvm::Value* start_ns = b_.CreateLoad(b_.getInt64Ty(), b_.CreateSelect(b_.CreateIsNull(entry), zero, entry));
      llvm::Value* now = module_.callHelper(b_, Helper::KtimeGetNs, b_.getInt64Ty(), {});
      v = b_.CreateSelect(b_.CreateICmpUGT(start_ns, now), b_.getInt64(0), b_.CreateSub(now, start_ns));
      break;
    }
    case BuiltinVar::Task: {
      // Where the verifier knows pointers by BTF type (fentry, fexit, tp_btf: the programs
      // whose arguments are the trampoline's array), the task as one, whose members are
      // direct loads; elsewhere its address, followed with probe reads.
      bool btf = args_.kind == ArgAccess::Kind::CtxArray || args_.kind == ArgAccess::Kind::SyscallRegs;
      v = module_.callHelper(b_, btf ? Helper::GetCurrentTaskBtf : Helper::GetCurrentTask,
                             b_.getInt64Ty(), {});
      return Val{v, type, btf, false};
    }
    case BuiltinVar::Comm:
    case BuiltinVar::Probe:
    case BuiltinVar::Kstack:
    case BuiltinVar::Ustack:
    case BuiltinVar::Caller:
      // Text and stacks are written where they are stored or compared.
      break;
  }
  return extend(v, type);
}

void ExprLowering::storeConstant(std::string_view text, llvm::Value* dst, uint32_t size) {
  for (uint32_t i = 0; i < size; ++i) {
    char c = i < text.size() ? text[i] : 0;
    b_.CreateStore(b_.getInt8(c), b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(i)));
    if (i >= text.size()) break;
  }
}

void ExprLowering::storeBuiltinString(const sema::BuiltinVariable& variable, llvm::Value* dst,
                                      uint32_t size) {
  switch (variable.id) {
    case BuiltinVar::Comm:
      module_.callHelper(b_, Helper::GetCurrentComm, b_.getInt64Ty(),
                         {dst, b_.getInt64(std::min<uint32_t>(size, 16))});
      return;
    case BuiltinVar::Func: return storeConstant(args_.func, dst, size);
    case BuiltinVar::Probe: return storeConstant(args_.probe, dst, size);
    default: return storeConstant("", dst, size);
  }
}

Val ExprLowering::builtinCall(const ast::Call& c, const sema::ExprInfo& ei) {
  BuiltinFn id = ei.function->id;
  if (id == BuiltinFn::Str) return string(c, ei.operands.empty() ? string_bytes_ : ei.operands[0]);
  if (id == BuiltinFn::EnumName || id == BuiltinFn::NetnsName) return string(c, string_bytes_);  // the name, as a string
  if (id == BuiltinFn::Entry) {
    // Saved by the entry program (program_emitter.cpp); a program with no entry (the
    // entry program itself) evaluates the argument now.
    auto saved = args_.entry_values.find(&c);
    if (saved != args_.entry_values.end()) return extend(saved->second, ei.type);
    return value(*c.args[0]);
  }
  if (id == BuiltinFn::Kaddr) {
    // Found by sema in /proc/kallsyms when the query was compiled.
    return Val{b_.getInt64(ei.operands.empty() ? 0 : static_cast<uint64_t>(ei.operands[0])), ei.type};
  }
  if (id == BuiltinFn::Pcap) return packetFilter(c, ei);
  if (id == BuiltinFn::Strftime) {
    // The time itself: its field's format makes the text when the event prints.
    return Val{value(*c.args[1]).v, ei.type};
  }
  if (id == BuiltinFn::Cat || id == BuiltinFn::Join || id == BuiltinFn::Buf) {
    // Written by their fields (program_emitter.cpp): no value here.
    return Val{b_.getInt64(0), ei.type};
  }
  Val x = c.args.empty() ? Val{b_.getInt64(0), ei.type} : value(*c.args[0]);
  at(c);
  auto swap = [&](unsigned bits) {
    llvm::Value* narrow = b_.CreateTrunc(x.v, b_.getIntNTy(bits));
    llvm::Value* swapped = b_.CreateUnaryIntrinsic(llvm::Intrinsic::bswap, narrow);
    return Val{b_.CreateZExt(swapped, b_.getInt64Ty()), ei.type};
  };
  switch (id) {
    case BuiltinFn::Ntohs:
    case BuiltinFn::Htons: return swap(16);
    case BuiltinFn::Ntohl:
    case BuiltinFn::Htonl: return swap(32);
    case BuiltinFn::Hex:
    case BuiltinFn::Errno:
    case BuiltinFn::Ntop:
    case BuiltinFn::Ksym:
    case BuiltinFn::Usym:
      // The value itself: the field's kind formats it.
      return Val{x.v, x.type, x.btf, x.user};
    case BuiltinFn::Str:
    case BuiltinFn::EnumName:
    case BuiltinFn::NetnsName:
    case BuiltinFn::Entry:
    case BuiltinFn::Kaddr:
    case BuiltinFn::Strftime:
    case BuiltinFn::Pcap:
      // Handled above.
      break;
    case BuiltinFn::Cat:
    case BuiltinFn::Join:
    case BuiltinFn::Buf:
    case BuiltinFn::Fmt:
    case BuiltinFn::Count:
    case BuiltinFn::Sum:
    case BuiltinFn::Avg:
    case BuiltinFn::Min:
    case BuiltinFn::Max:
    case BuiltinFn::Hist:
    case BuiltinFn::Lhist:
    case BuiltinFn::Top:
    case BuiltinFn::Macros:  // a lookup table: only indexed, never a value
      // Printed from their fields (fmt, cat, join, buf), or kept in maps (aggregates): no
      // value here.
      break;
  }
  return Val{b_.getInt64(0), ei.type};
}

}  // namespace kq::lower

namespace kq::lower {

void ExprLowering::storeIpAddress(const ast::Call& c, llvm::Value* dst) {
  constexpr uint64_t kAfInet6 = 10;  // <sys/socket.h>: the family the runtime prints as IPv6
  Val family = value(*c.args[0]);
  Val addr = value(*c.args[1]);
  at(c);
  b_.CreateStore(family.v, dst);
  llvm::Value* bytes = b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt64(8));
  if (addr.type->isInteger()) {
    // An IPv4 address as a number: its bytes in memory are the address's (network order).
    b_.CreateStore(addr.v, bytes);
    return;
  }
  // What `addr` points at (or is): 16 bytes of IPv6, else the 4 of IPv4, read no further.
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  auto* v6 = llvm::BasicBlock::Create(b_.getContext(), "ntop_ipv6", fn);
  auto* v4 = llvm::BasicBlock::Create(b_.getContext(), "ntop_ipv4", fn);
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "ntop_done", fn);
  b_.CreateCondBr(b_.CreateICmpEQ(family.v, b_.getInt64(kAfInet6)), v6, v4);
  b_.SetInsertPoint(v6);
  probeRead(bytes, 16, addr.v, addr.user, false);
  b_.CreateBr(done);
  b_.SetInsertPoint(v4);
  probeRead(bytes, 4, addr.v, addr.user, false);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

}  // namespace kq::lower
