// How a program of an aggregate query updates its map: the key is computed into memory,
// the entry found or added (copied from an all-zero value: a value can be larger than the
// BPF stack), then every slot updated with atomic adds. A new group past the table's size
// is counted as a lost event.
#include <llvm/IR/InlineAsm.h>

#include "compiler/lower/program_emitter.h"

namespace kq::lower {
namespace {

using plan::AggregateKind;
using plan::AggregateSlot;

/// The entry of `key` in `map`, added from the zero value when missing; a group that
/// cannot be added (the table is full) is counted as lost.
llvm::Value* findOrAdd(ProgramEmitter& emitter, Program& program, llvm::GlobalVariable* map,
                       llvm::Value* key) {
  llvm::IRBuilder<>& b = program.b;
  ObjectBuilder& object = emitter.object();
  auto zeros = [&] {
    llvm::Value* zero_key = program.frame.allocate(4);
    b.CreateStore(b.getInt32(0), zero_key);
    llvm::Value* value = emitter.mapLookup(program, object.zeros, zero_key);
    auto* have_zeros = llvm::BasicBlock::Create(b.getContext(), "zeros", program.fn);
    branchOnTo(b, b.CreateIsNotNull(value), have_zeros, program.bail);
    b.SetInsertPoint(have_zeros);
    return value;
  };
  // BPF_NOEXIST: of two CPUs adding the same group, the second finds the first's entry.
  llvm::Value* why = nullptr;
  llvm::Value* entry = emitter.lookupOrAdd(program, map, key, zeros, /*BPF_NOEXIST=*/1, &why);
  auto* found = llvm::BasicBlock::Create(b.getContext(), "update", program.fn);
  auto* not_added = llvm::BasicBlock::Create(b.getContext(), "not_added", program.fn);
  auto* table_full = llvm::BasicBlock::Create(b.getContext(), "table_full", program.fn);
  auto* no_memory = llvm::BasicBlock::Create(b.getContext(), "no_memory", program.fn);
  branchOnTo(b, b.CreateIsNotNull(entry), found, not_added);
  // The table holds kAggregateGroups (E2BIG past them); a table that allocates its groups
  // as they come may also find no memory ready (ENOMEM), which is not a full table.
  b.SetInsertPoint(not_added);
  constexpr int64_t kE2big = 7;
  b.CreateCondBr(b.CreateICmpEQ(why, b.getInt64(-kE2big)), table_full, no_memory);
  b.SetInsertPoint(table_full);
  emitter.countLost(program, plan::Lost::TableFull);
  b.SetInsertPoint(no_memory);
  emitter.countLost(program, plan::Lost::TableNoMemory);
  b.SetInsertPoint(found);
  return entry;
}

/// The bucket of a power-of-two histogram: 0 below 1, then n for [2^(n-1), 2^n); an
/// unsigned value of 2^63 or more is in the last, [2^63, 2^64), not below 1.
llvm::Value* log2Bucket(llvm::IRBuilder<>& b, llvm::Value* x, bool is_signed) {
  // The bit length of x by binary search: BPF has no count-leading-zeros, and LLVM 16's
  // expansion of llvm.ctlz crashes its BPF instruction selection.
  llvm::Value* positive = is_signed ? b.CreateICmpSGT(x, b.getInt64(0)) : b.CreateICmpNE(x, b.getInt64(0));
  llvm::Value* rest = x;
  llvm::Value* bits = b.getInt64(0);
  for (uint64_t shift : {32, 16, 8, 4, 2, 1}) {
    llvm::Value* high = b.CreateICmpUGE(rest, b.getInt64(1ull << shift));
    rest = b.CreateSelect(high, b.CreateLShr(rest, b.getInt64(shift)), rest);
    bits = b.CreateSelect(high, b.CreateAdd(bits, b.getInt64(shift)), bits);
  }
  // [2^k, 2^(k+1)) has k+1 bits, and is bucket k+2: 0 holds the negative values, 1 zero
  // (plan::histBucketOf).
  bits = b.CreateAdd(bits, b.getInt64(2));
  llvm::Value* zero_or_below = b.CreateSelect(b.CreateICmpEQ(x, b.getInt64(0)), b.getInt64(1), b.getInt64(0));
  return b.CreateSelect(positive, bits, zero_or_below);
}

/// The bucket of a linear histogram: 0 below `lo`, then one per `step`, the last from `hi`.
llvm::Value* linearBucket(llvm::IRBuilder<>& b, llvm::Value* x, const AggregateSlot& s) {
  // Unsigned values compare unsigned (a u64 above 2^63 is above `hi`), against bounds that
  // are not negative.
  bool is_unsigned = !s.is_signed && s.lo >= 0;
  llvm::Value* below = is_unsigned ? b.CreateICmpULT(x, b.getInt64(s.lo)) : b.CreateICmpSLT(x, b.getInt64(s.lo));
  llvm::Value* above = is_unsigned ? b.CreateICmpUGE(x, b.getInt64(s.hi)) : b.CreateICmpSGE(x, b.getInt64(s.hi));
  // Unsigned division of a non-negative offset (BPF divides unsigned only).
  llvm::Value* offset = b.CreateSelect(below, b.getInt64(0), b.CreateSub(x, b.getInt64(s.lo)));
  llvm::Value* inside = b.CreateAdd(b.CreateUDiv(offset, b.getInt64(s.step)), b.getInt64(1));
  llvm::Value* last = b.getInt64(s.buckets - 1);
  return b.CreateSelect(below, b.getInt64(0), b.CreateSelect(above, last, inside));
}

/// `index`, at most `last`, compared where the verifier sees it: the index goes through an
/// empty `asm` first (as libbpf's `barrier_var`). Otherwise LLVM, which can prove the bound
/// (`x % 100 / 10`, or from the known bits of `-8 >> n`), drops the compare, and the
/// verifier, which cannot (it knows nothing of a remainder, nor of values chosen by
/// `select`), rejects the access as unbounded. `bpf.passthrough` would not do: it is gone
/// before instruction selection, which drops the compare by known bits.
llvm::Value* boundedIndex(llvm::IRBuilder<>& b, llvm::Value* index, uint64_t last) {
  auto* type = llvm::FunctionType::get(b.getInt64Ty(), {b.getInt64Ty()}, false);
  auto* barrier = llvm::InlineAsm::get(type, "", "=r,0", /*hasSideEffects=*/true);
  llvm::Value* opaque = b.CreateCall(type, barrier, {index});
  return b.CreateSelect(b.CreateICmpUGT(opaque, b.getInt64(last)), b.getInt64(last), opaque);
}

/// min/max: a seen flag, then the value's encoding (plan::encodeExtreme), of which the
/// slot keeps the largest by compare-and-swap: exact when CPUs race, in at most
/// kCasAttempts tries (each failure means another CPU stored a larger one meanwhile, so
/// the loop ends quickly; it is unrolled, as the verifier wants bounded code).
void updateExtreme(Program& program, llvm::Value* slot, llvm::Value* x, const AggregateSlot& s) {
  constexpr int kCasAttempts = 4;
  llvm::IRBuilder<>& b = program.b;
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Value* encoded = x;
  if (s.is_signed) encoded = b.CreateXor(encoded, b.getInt64(uint64_t{1} << 63));
  if (s.kind == AggregateKind::Min) encoded = b.CreateNot(encoded);
  llvm::Value* value_at = b.CreateGEP(b.getInt8Ty(), slot, b.getInt64(8));
  auto* done = llvm::BasicBlock::Create(ctx, "extreme_done", program.fn);
  llvm::Value* old = b.CreateLoad(b.getInt64Ty(), value_at);
  for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
    auto* swap = llvm::BasicBlock::Create(ctx, "extreme_swap", program.fn);
    b.CreateCondBr(b.CreateICmpULE(encoded, old), done, swap);
    b.SetInsertPoint(swap);
    llvm::Value* result = b.CreateAtomicCmpXchg(value_at, old, encoded, llvm::MaybeAlign(8),
                                                llvm::AtomicOrdering::Monotonic,
                                                llvm::AtomicOrdering::Monotonic);
    auto* retry = llvm::BasicBlock::Create(ctx, "extreme_retry", program.fn);
    b.CreateCondBr(b.CreateExtractValue(result, 1), done, retry);
    b.SetInsertPoint(retry);
    old = b.CreateExtractValue(result, 0);
  }
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateStore(b.getInt64(1), slot);  // seen: idempotent, no race to lose
}

/// The entry of the event's group: its key computed into memory, then found or added.
llvm::Value* groupEntry(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                        const Aggregation& agg) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(agg.layout.key_size);
  // Volatile: LLVM would merge the stores into a memset, which BPF cannot call and LLVM
  // expands only up to 128 stores (a `join(argv)` key has 129).
  for (uint32_t i = 0; i < agg.layout.key_size; i += 8) {
    b.CreateStore(b.getInt64(0), b.CreateGEP(b.getInt8Ty(), key, b.getInt64(i)), /*isVolatile=*/true);
  }
  if (agg.layout.interval_bytes) {
    // The interval this event counts in: ticks print finished intervals only.
    llvm::Value* now = emitter.object().module().callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {});
    b.CreateStore(b.CreateUDiv(now, b.getInt64(agg.layout.every_ns)), key);
  }
  for (const Field& f : agg.keys) emitter.writeKeyField(program, lower, key, f, agg.keys);
  return findOrAdd(emitter, program, agg.map, key);
}

/// A keyless table's entry of its array: always there.
llvm::Value* singleEntry(ProgramEmitter& emitter, Program& program, const Aggregation& agg) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(4);
  b.CreateStore(b.getInt32(agg.layout.entry), key);
  llvm::Value* entry = emitter.mapLookup(program, agg.map, key);
  auto* found = llvm::BasicBlock::Create(b.getContext(), "update", program.fn);
  branchOnTo(b, b.CreateIsNotNull(entry), found, program.bail);
  b.SetInsertPoint(found);
  return entry;
}

}  // namespace

void emitAggregateUpdate(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                         const Aggregation& agg) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* value = agg.layout.single ? singleEntry(emitter, program, agg)
                                         : groupEntry(emitter, program, lower, agg);
  auto at = [&](uint32_t offset) { return b.CreateGEP(b.getInt8Ty(), value, b.getInt64(offset)); };
  auto add = [&](llvm::Value* ptr, llvm::Value* v) {
    b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, ptr, v, llvm::MaybeAlign(8),
                      llvm::AtomicOrdering::Monotonic);
  };
  // A histogram adds its value to its sum, then counts it in its bucket.
  auto bucket = [&](const AggregateSlot& s, llvm::Value* x, llvm::Value* index) {
    add(at(s.offset), x);
    llvm::Value* bounded = boundedIndex(b, index, s.buckets - 1);
    llvm::Value* buckets = at(static_cast<uint32_t>(plan::bucketsOffset(s)));
    add(b.CreateGEP(b.getInt8Ty(), buckets, b.CreateMul(bounded, b.getInt64(8))), b.getInt64(1));
  };
  for (size_t i = 0; i < agg.layout.slots.size(); ++i) {
    const AggregateSlot& s = agg.layout.slots[i];
    const ast::Expr* arg = i < agg.arguments.size() ? agg.arguments[i] : nullptr;
    llvm::Value* x = arg ? lower.value(*arg).v : b.getInt64(0);
    switch (s.kind) {
      case AggregateKind::Count:
      case AggregateKind::Top: add(at(s.offset), b.getInt64(1)); break;
      case AggregateKind::Sum: add(at(s.offset), x); break;
      case AggregateKind::Avg:
        add(at(s.offset), x);
        add(at(s.offset + 8), b.getInt64(1));
        break;
      case AggregateKind::Min:
      case AggregateKind::Max: updateExtreme(program, at(s.offset), x, s); break;
      case AggregateKind::Hist: bucket(s, x, log2Bucket(b, x, s.is_signed)); break;
      case AggregateKind::Lhist: bucket(s, x, linearBucket(b, x, s)); break;
    }
  }
}

}  // namespace kq::lower
