#include "compiler/lower/site_programs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "compiler/lower/frame.h"
#include "compiler/lower/live_sites.h"
#include "compiler/lower/object_builder.h"

namespace kq::lower {
namespace {

/// The kernel's limits on one program (include/linux/bpf.h): maps it uses (MAX_USED_MAPS),
/// and functions (BPF_MAX_SUBPROGS, 256); a site with more is split between programs.
constexpr size_t kMapsPerProgram = 64;
constexpr size_t kPartsPerProgram = 128;
/// A site's parts are inlined into its programs (a bpf-to-bpf call costs more than a small
/// query's filter and counter) where their stack slots fit one program's budget, in at
/// most this many programs; else they are called, in as few programs as the limits allow
/// (a trampoline takes 38).
constexpr size_t kInlinedPrograms = 4;
/// Inlined parts' slots live only while their part runs (the inliner marks their
/// lifetimes), so LLVM lays the parts' frames over one another: a program of inlined parts
/// takes its largest part's slots (50 count queries took 12 bytes, not 400). Their sum is
/// bounded all the same, so that the program would fit the kernel's 512 bytes even if LLVM
/// did not overlap them.
constexpr uint32_t kInlinedStackSum = 448;

/// The maps a part uses (globals of section .maps, wherever its code names them).
std::set<const llvm::GlobalVariable*> mapsOf(const llvm::Function& fn) {
  std::set<const llvm::GlobalVariable*> maps;
  std::vector<const llvm::Value*> work;
  for (const llvm::BasicBlock& block : fn) {
    for (const llvm::Instruction& inst : block) {
      for (const llvm::Value* operand : inst.operands()) work.push_back(operand);
    }
  }
  std::set<const llvm::Value*> seen;
  while (!work.empty()) {
    const llvm::Value* v = work.back();
    work.pop_back();
    if (!seen.insert(v).second) continue;
    if (const auto* global = llvm::dyn_cast<llvm::GlobalVariable>(v)) {
      if (global->getSection() == ".maps") maps.insert(global);
    } else if (const auto* expr = llvm::dyn_cast<llvm::ConstantExpr>(v)) {
      for (const llvm::Value* operand : expr->operands()) work.push_back(operand);
    }
  }
  return maps;
}

/// A site's parts in turn, in programs within the kernel's limits and, when `stack_budget`
/// is given (the parts inlined), whose largest part's stack slots fit in it.
std::vector<std::vector<ProgramPart*>> programsOf(const std::vector<ProgramPart*>& parts,
                                                  const llvm::GlobalVariable* stops,
                                                  std::optional<uint32_t> stack_budget) {
  std::vector<std::vector<ProgramPart*>> programs(1);
  std::set<const llvm::GlobalVariable*> used;
  uint32_t sum = 0;
  for (ProgramPart* part : parts) {
    std::set<const llvm::GlobalVariable*> maps = mapsOf(*part->fn);
    std::set<const llvm::GlobalVariable*> with = used;
    with.insert(maps.begin(), maps.end());
    if (stops) with.insert(stops);
    uint32_t stack = part->planned.stack_bytes;
    bool full = with.size() > kMapsPerProgram || programs.back().size() == kPartsPerProgram ||
                (stack_budget && (stack > *stack_budget || sum + stack > kInlinedStackSum));
    if (!programs.back().empty() && full) {
      programs.emplace_back();
      with = maps;
      if (stops) with.insert(stops);
      sum = 0;
    }
    programs.back().push_back(part);
    used = std::move(with);
    sum += stack;
  }
  return programs;
}

/// Where and how a part attaches: parts of one method with the same place can be one program.
std::string placeOf(const ProgramPart& part) {
  const plan::PlannedProgram& p = part.planned;
  std::string place = fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", p.method, part.section,
                                  static_cast<int>(p.attach), p.target, p.binary, p.period_ns,
                                  p.frequency_hz, p.perf_type, p.perf_config, p.every_cpu,
                                  p.uprobe_offset, p.ref_ctr_offset);
  place += fmt::format("\n{:x} {} {} +{:x} bpf {}", p.bp_addr, p.bp_len, p.bp_type, p.kprobe_offset,
                       p.attach_program);
  for (const std::string& symbol : p.symbols) place += "\n" + symbol;
  place += "\n#";
  for (uint64_t cookie : p.cookies) place += fmt::format("\n{}", cookie);
  return place;
}

/// For each group, the group whose programs it shares: the first group that attaches to the
/// same places in every method (itself when none does).
std::vector<uint32_t> sharedGroups(const std::vector<ProgramPart>& parts, size_t groups) {
  std::vector<std::vector<std::string>> places(groups);
  std::vector<bool> alone(groups, false);
  for (const ProgramPart& part : parts) {
    uint32_t g = part.planned.group;
    if (g >= groups) continue;
    places[g].push_back(placeOf(part));
    if (part.planned.whole_session) alone[g] = true;
  }
  std::vector<uint32_t> shared(groups);
  std::map<std::vector<std::string>, uint32_t> first;
  for (uint32_t g = 0; g < groups; ++g) {
    shared[g] = g;
    if (alone[g] || places[g].empty()) continue;
    std::vector<std::string>& key = places[g];
    std::sort(key.begin(), key.end());
    key.erase(std::unique(key.begin(), key.end()), key.end());
    shared[g] = first.emplace(std::move(key), g).first->second;
  }
  return shared;
}

/// The calls to `kq.query_running` (ObjectBuilder::queryRunning) in `fn`.
std::vector<llvm::CallInst*> runningTests(ObjectBuilder& object, llvm::Function& fn) {
  std::vector<llvm::CallInst*> calls;
  for (llvm::User* user : object.queryRunning()->users()) {
    auto* call = llvm::dyn_cast<llvm::CallInst>(user);
    if (call && call->getFunction() == &fn) calls.push_back(call);
  }
  return calls;
}

/// Whether `query`'s word in `words` (the stops map's looked-up element) is 0: it runs.
llvm::Value* wordIsZero(llvm::IRBuilder<>& b, llvm::Value* words, llvm::Value* query) {
  llvm::Value* word = b.CreateGEP(b.getInt32Ty(), words, query);
  return b.CreateICmpEQ(b.CreateLoad(b.getInt32Ty(), word), b.getInt32(0));
}

/// Makes each `kq.query_running(q)` in `fn` the test of query q's word (`words`: the
/// looked-up element), or true where there is none to test.
void decideRunning(ObjectBuilder& object, llvm::Function& fn, llvm::Value* words) {
  for (llvm::CallInst* call : runningTests(object, fn)) {
    llvm::Value* running = llvm::ConstantInt::getTrue(call->getContext());
    if (words) {
      llvm::IRBuilder<> b(call);
      running = wordIsZero(b, words, call->getArgOperand(0));
    }
    call->replaceAllUsesWith(running);
    call->eraseFromParent();
  }
}

/// What the inlined parts read and test the same way, read and tested once: the parts'
/// reads of the context and of kernel memory the verifier knows (marked !invariant.load,
/// ExprLowering) come before their tests of their queries' words, so the first part's
/// dominate the next parts' (LLVM's own pipeline would not see them as the same: by then
/// each CO-RE access is a call of its own).
void shareReads(llvm::Function& fn) {
  llvm::FunctionAnalysisManager analyses;
  analyses.registerPass([] { return llvm::PassInstrumentationAnalysis(); });
  analyses.registerPass([] { return llvm::DominatorTreeAnalysis(); });
  analyses.registerPass([] { return llvm::AssumptionAnalysis(); });
  analyses.registerPass([] { return llvm::TargetLibraryAnalysis(); });
  analyses.registerPass([] { return llvm::TargetIRAnalysis(); });
  llvm::EarlyCSEPass(/*UseMemorySSA=*/false).run(fn, analyses);
}

/// Whether a program of one query checks its word all the same: one whose detach waits for
/// the kernel (not the fork follower, which serves the whole session whatever ends).
bool stoppedByWord(const plan::PlannedProgram& p) { return plan::detachWaits(p.attach) && !p.whole_session; }

/// The program of one site: each part in turn; with parts of several queries, each acts
/// only while its query's word in the stops map's one element is 0.
plan::PlannedProgram siteProgram(ObjectBuilder& object, const std::vector<ProgramPart*>& parts,
                                 uint32_t group, bool inline_parts) {
  BpfModule& module = object.module();
  const ProgramPart& first = *parts.front();
  plan::PlannedProgram planned = first.planned;
  planned.group = group;
  std::set<uint32_t> queries;
  for (const ProgramPart* part : parts) queries.insert(part->planned.queries.begin(), part->planned.queries.end());
  planned.queries.assign(queries.begin(), queries.end());
  // Several queries' parts each run while their query's word is 0; so does the one part of
  // a program whose detach waits for the kernel, which the session can then stop at once.
  // A program whose parts only count in keyless tables does nothing anyone sees once its
  // queries ended: it need not test their words to be left to the reaper.
  planned.checks_stops = queries.size() > 1 || stoppedByWord(first.planned);
  bool guarded = planned.checks_stops;
  // A slot of a live site ends with its tail calls: one way out, so never a part adopted;
  // and only with its parts inlined (tail calls beside bpf-to-bpf calls take the stack of
  // every frame on the way, a limit a program of called parts may pass).
  bool live = object.options().live_sites && mayBeLiveSlot(planned) && (inline_parts || parts.size() == 1);

  // The session's end is the session's word, tested once at the program's start: one read
  // decides for every part of an event, so a count and a print on one place end at one
  // instant. Parts that only count test no word of their own (ProgramPart::counts_only). A
  // live site's slots are ended by emptying them.
  bool session_test = guarded && !live;
  if (session_test) {
    for (const ProgramPart* part : parts) {
      if (part->counts_only) decideRunning(object, *part->fn, nullptr);
    }
  }
  if (!guarded && !live && parts.size() == 1) decideRunning(object, *first.fn, nullptr);
  if (!guarded && !live && parts.size() == 1 &&
      module.adoptPart(first.fn, first.planned.function, first.section, first.offset)) {
    // A site of one part is that part: no call to inline, no second function to optimize.
    planned.helpers = module.helpersOf(first.fn);
    return planned;
  }
  llvm::Function* fn = module.addProgram(first.planned.function, first.section, first.offset);
  llvm::LLVMContext& ctx = module.context();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  b.SetCurrentDebugLocation(module.location(fn->getSubprogram(), first.offset));
  // The queries' words, looked up once: each part reads its query's at its offset.
  llvm::Value* words = nullptr;
  llvm::BasicBlock* none = nullptr;  // no element: nothing runs
  if (guarded) {
    llvm::Value* key = b.CreateAlloca(b.getInt32Ty());
    b.CreateStore(b.getInt32(0), key);
    words = module.callHelper(b, Helper::MapLookupElem, b.getPtrTy(), {object.queryStops(), key});
    auto* found = llvm::BasicBlock::Create(ctx, "query_words", fn);
    none = llvm::BasicBlock::Create(ctx, "no_words", fn);
    b.CreateCondBr(b.CreateIsNotNull(words), found, none);
    b.SetInsertPoint(none);
    b.CreateRet(b.getInt32(0));
    b.SetInsertPoint(found);
    if (session_test) {
      // The session ended: nothing runs (every query's word is set with it).
      auto* session = llvm::BasicBlock::Create(ctx, "session_running", fn);
      b.CreateCondBr(wordIsZero(b, words, b.getInt64(object.sessionWord())), session, none);
      b.SetInsertPoint(session);
    }
  }
  inline_parts = inline_parts || parts.size() == 1;
  uint32_t part_stack = 0;
  std::vector<llvm::CallInst*> calls;
  for (const ProgramPart* part : parts) {
    if (!inline_parts) part->fn->addFnAttr(llvm::Attribute::NoInline);
    auto* run = llvm::BasicBlock::Create(ctx, "run_part", fn);
    auto* next = llvm::BasicBlock::Create(ctx, "next_part", fn);
    // An inlined part tests its word where it starts to act (decideRunning); any other,
    // before it runs.
    if (guarded && !(session_test && part->counts_only) &&
        !(inline_parts && !runningTests(object, *part->fn).empty())) {
      b.CreateCondBr(wordIsZero(b, words, b.getInt64(part->planned.queries.front())), run, next);
    } else {
      b.CreateBr(run);
    }
    b.SetInsertPoint(run);
    calls.push_back(b.CreateCall(part->fn, {fn->getArg(0)}));
    b.CreateBr(next);
    b.SetInsertPoint(next);
    part_stack = std::max(part_stack, part->planned.stack_bytes);
  }
  uint32_t chain_stack = live ? emitLiveChain(object, b, fn, first.planned.function) : 0;
  b.CreateRet(b.getInt32(0));
  // Last, so that the block before each part's is the one it follows (BPF's branches
  // cannot be turned around after instruction selection: each out of place costs a jump).
  if (none) none->moveAfter(&fn->back());
  if (live) emitLiveDispatcher(object, first.planned.function, first.section, first.offset);
  if (inline_parts) {
    // Inlined here, before the optimizer runs: it then sees each part once, as the
    // program, not once alone and again inlined (a glob's 800 programs compiled 35% slower).
    for (llvm::CallInst* call : calls) {
      llvm::Function* callee = call->getCalledFunction();
      llvm::InlineFunctionInfo info;
      if (llvm::InlineFunction(*call, info).isSuccess()) {
        if (callee->use_empty()) callee->eraseFromParent();
        continue;
      }
      // Not inlined after all: a part that tests its word itself is called only while
      // its query runs.
      std::vector<llvm::CallInst*> tests = runningTests(object, *callee);
      if (words && !tests.empty()) {
        llvm::IRBuilder<> at(call);
        llvm::Value* running = wordIsZero(at, words, tests.front()->getArgOperand(0));
        call->moveBefore(llvm::SplitBlockAndInsertIfThen(running, call, false));
      }
      decideRunning(object, *callee, nullptr);
    }
    decideRunning(object, *fn, words);
    if (parts.size() > 1) shareReads(*fn);
  } else {
    for (const ProgramPart* part : parts) decideRunning(object, *part->fn, nullptr);
  }

  // Inlined parts lie over one another in the program's frame (kInlinedStackSum); a called
  // part has a frame of its own, beside the program's. Either way the program's own slot
  // (the key) comes first.
  planned.stack_bytes = (guarded ? 8 : 0) + part_stack + chain_stack;
  planned.helpers = module.helpersOf(fn);
  for (const ProgramPart* part : parts) {
    for (int helper : part->planned.helpers) {
      if (std::find(planned.helpers.begin(), planned.helpers.end(), helper) == planned.helpers.end()) {
        planned.helpers.push_back(helper);
      }
    }
  }
  return planned;
}

}  // namespace

void makeSitePrograms(ObjectBuilder& object) {
  plan::ProgramPlan& plan = object.plan();
  std::vector<ProgramPart>& parts = object.parts();
  std::vector<uint32_t> shared = sharedGroups(parts, plan.group_names.size());
  auto groupOf = [&](uint32_t g) { return g < shared.size() ? shared[g] : g; };

  // Sites in the order their first parts were made (so a lone query's programs keep their
  // order, and a join's source runs before the query that looks its events up).
  std::map<std::tuple<uint32_t, std::string>, size_t> site_of;
  std::vector<std::vector<ProgramPart*>> sites;
  std::vector<uint32_t> site_group;
  for (ProgramPart& part : parts) {
    uint32_t group = groupOf(part.planned.group);
    std::string place = part.planned.whole_session ? part.planned.function : placeOf(part);
    auto [it, added] = site_of.emplace(std::make_tuple(group, std::move(place)), sites.size());
    if (added) {
      sites.emplace_back();
      site_group.push_back(group);
    }
    sites[it->second].push_back(&part);
  }
  for (size_t s = 0; s < sites.size(); ++s) {
    std::set<uint32_t> queries;
    for (const ProgramPart* part : sites[s]) queries.insert(part->planned.queries.begin(), part->planned.queries.end());
    bool guarded = queries.size() > 1 || stoppedByWord(sites[s].front()->planned);
    const llvm::GlobalVariable* stops = guarded ? object.queryStops() : nullptr;
    uint32_t budget = Frame::kStackBudget - (stops ? 8 : 0);
    std::vector<std::vector<ProgramPart*>> programs = programsOf(sites[s], stops, budget);
    bool inlined = programs.size() <= kInlinedPrograms;
    if (!inlined) programs = programsOf(sites[s], stops, std::nullopt);
    for (const std::vector<ProgramPart*>& parts : programs) {
      plan.programs.push_back(siteProgram(object, parts, site_group[s], inlined));
    }
  }

  // A packet query whose group is another's says where it attached once.
  std::vector<uint32_t> packet_groups;
  for (uint32_t g : plan.packet_groups) {
    g = groupOf(g);
    if (std::find(packet_groups.begin(), packet_groups.end(), g) == packet_groups.end()) packet_groups.push_back(g);
  }
  plan.packet_groups = std::move(packet_groups);
  parts.clear();  // inlined parts are gone from the module
  object.dropQueryRunning();  // every part's tests of its query's word are decided
}

}  // namespace kq::lower
