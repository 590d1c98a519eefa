// Where one program keeps its temporaries (strings, keys, values read by probe reads):
// small ones on the 512-byte BPF stack up to a budget, everything else in the program's own
// entry of the per-CPU scratch map. So the stack a program uses is known before LLVM runs,
// and queries whose temporaries add up to more than the stack still compile.
#pragma once

#include <cstdint>

#include <llvm/IR/IRBuilder.h>

namespace kq::lower {

class ObjectBuilder;

class Frame {
 public:
  /// Stack bytes kq's own slots may take: the rest of the 512 is LLVM's (spills, calls).
  static constexpr uint32_t kStackBudget = 256;
  /// The most scratch one program may use (a per-CPU map value holds at most 32 KiB).
  static constexpr uint32_t kScratchLimit = 32 * 1024;

  /// `setup` runs once before the program's code: the scratch lookup goes there, ending
  /// the program early (at `bail`) if it fails.
  Frame(ObjectBuilder& object, llvm::Function* fn, llvm::BasicBlock* setup, llvm::BasicBlock* bail,
        bool may_nest);

  /// `bytes` of memory, 8-aligned, valid for the whole program; `at` is the kq source
  /// position that needs it (for the diagnostic when scratch runs out).
  llvm::Value* allocate(uint32_t bytes, llvm::DebugLoc at = {});
  /// Where the program first needed more scratch than fits.
  const llvm::DebugLoc& overflowAt() const { return overflow_at_; }

  uint32_t stackBytes() const { return stack_bytes_; }
  uint32_t scratchBytes() const { return scratch_bytes_; }
  /// Whether the program asked for more scratch than one map value holds.
  bool overflowed() const { return scratch_bytes_ > kScratchLimit; }

 private:
  llvm::Value* onStack(uint32_t bytes);
  llvm::Value* scratchBase();

  ObjectBuilder& object_;
  llvm::Function* fn_;
  llvm::BasicBlock* setup_;
  llvm::BasicBlock* bail_;
  bool may_nest_;
  llvm::BasicBlock* body_ = nullptr;  // the first block after setup
  llvm::Value* scratch_ = nullptr;
  uint32_t stack_bytes_ = 0;
  uint32_t scratch_bytes_ = 0;
  llvm::DebugLoc overflow_at_;
};

}  // namespace kq::lower
