// Call context (`a -> b -> c`, ksnoop -s): per thread, how deep it is inside each outer
// function, kept in a map of kMaxCallContext counters. Entering an outer function counts one
// level deeper (only when already inside the functions before it), leaving one less; the
// innermost probe's programs keep only events inside every outer function.
#include "compiler/lower/program_emitter.h"

namespace kq::lower {
namespace {

using plan::Attach;

struct ContextMethod {
  const char* enter;
  const char* leave;
  Attach enter_attach;
  Attach leave_attach;
};

constexpr ContextMethod kMethods[] = {{"fentry/", "fexit/", Attach::Fentry, Attach::Fexit},
                                      {"kprobe/", "kretprobe/", Attach::Kprobe, Attach::Kretprobe}};

/// The thread's depths; the outermost function creates them on first use.
llvm::Value* depthsOf(ProgramEmitter& emitter, Program& program, const ProbeUnit& p,
                      llvm::Value* key, bool create) {
  llvm::IRBuilder<>& b = program.b;
  if (!create) return emitter.mapLookup(program, p.context, key);
  return emitter.lookupOrAdd(program, p.context, key, [&] {
    llvm::Value* zeros = program.frame.allocate(4 * sema::kMaxCallContext);
    for (uint32_t i = 0; i < sema::kMaxCallContext; ++i) {
      b.CreateStore(b.getInt32(0), b.CreateGEP(b.getInt32Ty(), zeros, b.getInt64(i)));
    }
    return zeros;
  }, /*BPF_ANY=*/0);
}

void emitLevelProgram(ProgramEmitter& emitter, const ProbeUnit& p, const btf::Function& fn,
                      uint32_t level, uint32_t method, bool entering) {
  const ContextMethod& m = kMethods[method];
  ObjectBuilder& object = emitter.object();
  std::string name = object.programName();
  auto program = emitter.begin(name, std::string(entering ? m.enter : m.leave) + fn.name,
                               p.probe.chain[level].target->range);
  llvm::IRBuilder<>& b = program->b;
  llvm::Value* key = emitter.tidKey(*program);
  llvm::Value* depths = depthsOf(emitter, *program, p, key, entering && level == 0);
  auto* found = llvm::BasicBlock::Create(b.getContext(), "found", program->fn);
  b.CreateCondBr(b.CreateIsNotNull(depths), found, program->bail);
  b.SetInsertPoint(found);
  llvm::Value* slot = b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(level));
  llvm::Value* depth = b.CreateLoad(b.getInt32Ty(), slot);
  if (entering) {
    for (uint32_t outer = 0; outer < level; ++outer) {
      llvm::Value* d = b.CreateLoad(b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(outer)));
      auto* inside = llvm::BasicBlock::Create(b.getContext(), "inside", program->fn);
      b.CreateCondBr(b.CreateICmpNE(d, b.getInt32(0)), inside, program->bail);
      b.SetInsertPoint(inside);
    }
    b.CreateStore(b.CreateAdd(depth, b.getInt32(1)), slot);
  } else {
    auto* positive = llvm::BasicBlock::Create(b.getContext(), "positive", program->fn);
    b.CreateCondBr(b.CreateICmpNE(depth, b.getInt32(0)), positive, program->bail);
    b.SetInsertPoint(positive);
    b.CreateStore(b.CreateSub(depth, b.getInt32(1)), slot);
  }
  ProgramSite site;
  site.attach = entering ? m.enter_attach : m.leave_attach;
  site.target = fn.name;
  site.group = *p.group;
  site.method = method;
  emitter.finish(*program, name, site);
}

}  // namespace

void emitContextPrograms(ProgramEmitter& emitter, const ProbeUnit& p, const btf::Function& fn,
                         uint32_t level) {
  for (uint32_t method = 0; method < 2; ++method) {
    for (bool entering : {true, false}) emitLevelProgram(emitter, p, fn, level, method, entering);
  }
}

void contextFilter(ProgramEmitter& emitter, Program& program, const ProbeUnit& p) {
  if (!p.context) return;
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* depths = emitter.mapLookup(program, p.context, emitter.tidKey(program));
  auto* found = llvm::BasicBlock::Create(b.getContext(), "in_context", program.fn);
  b.CreateCondBr(b.CreateIsNotNull(depths), found, program.bail);
  b.SetInsertPoint(found);
  llvm::Value* innermost = b.CreateLoad(
      b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(p.context_levels - 1)));
  auto* inside = llvm::BasicBlock::Create(b.getContext(), "inside", program.fn);
  b.CreateCondBr(b.CreateICmpNE(innermost, b.getInt32(0)), inside, program.bail);
  b.SetInsertPoint(inside);
}

}  // namespace kq::lower
