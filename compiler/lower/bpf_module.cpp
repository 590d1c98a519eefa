#include "compiler/lower/bpf_module.h"

#include <algorithm>
#include <mutex>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <fmt/format.h>

namespace kq::lower {
namespace {

void initializeBpfTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeBPFTargetInfo();
    LLVMInitializeBPFTarget();
    LLVMInitializeBPFTargetMC();
    LLVMInitializeBPFAsmPrinter();
  });
}

/// One per thread, made at its first compile and kept: making one builds the BPF subtarget's
/// tables (half a millisecond a compile), and it keeps nothing of the modules it compiles.
Result<llvm::TargetMachine*> bpfTargetMachine() {
  thread_local std::unique_ptr<llvm::TargetMachine> kept;
  if (kept) return kept.get();
  initializeBpfTarget();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget("bpfel", error);
  if (!target) return Error{"LLVM has no BPF target: " + error};
  llvm::TargetOptions options;
  kept.reset(target->createTargetMachine("bpfel", "v3", "", options, llvm::Reloc::Static,
                                         std::nullopt, llvm::CodeGenOpt::Aggressive));
  if (!kept) return Error{"LLVM cannot create a BPF target machine"};
  return kept.get();
}

Result<std::string> codegen(llvm::TargetMachine& tm, llvm::Module& module,
                            llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, stream, nullptr, type)) {
    return Error{"LLVM cannot emit a BPF object"};
  }
  pm.run(module);
  return std::string(buffer.begin(), buffer.end());
}

/// Keeps LLVM's errors (which would otherwise end the process) as problems of the module.
void keepProblem(const llvm::DiagnosticInfo& info, void* context) {
  if (info.getSeverity() != llvm::DS_Error) return;
  auto* problems = static_cast<std::vector<CodegenProblem>*>(context);
  CodegenProblem problem;
  llvm::raw_string_ostream text(problem.message);
  llvm::DiagnosticPrinterRawOStream printer(text);
  info.print(printer);
  text.flush();
  if (const auto* located = llvm::dyn_cast<llvm::DiagnosticInfoUnsupported>(&info)) {
    if (located->isLocationAvailable()) {
      problem.line = located->getLocation().getLine();
      problem.column = located->getLocation().getColumn();
    }
  }
  problems->push_back(std::move(problem));
}

}  // namespace

BpfModule::BpfModule(const std::string& name, const SourceFile& source)
    : context_(std::make_unique<llvm::LLVMContext>()),
      module_(std::make_unique<llvm::Module>(name, *context_)),
      di_(std::make_unique<llvm::DIBuilder>(*module_)),
      source_(source) {
  context_->setDiagnosticHandlerCallBack(keepProblem, &problems_);
  module_->setTargetTriple("bpfel");
  module_->setDataLayout("e-m:e-p:64:64-i64:64-i128:128-n32:64-S128");
  module_->addModuleFlag(llvm::Module::Warning, "Debug Info Version",
                         llvm::DEBUG_METADATA_VERSION);
  module_->addModuleFlag(llvm::Module::Warning, "Dwarf Version", 5);
  // The kq text itself is the file's source, so BTF line info quotes kq, not C.
  file_ = di_->createFile(source.name(), ".", std::nullopt, llvm::StringRef(source.text()));
  unit_ = di_->createCompileUnit(llvm::dwarf::DW_LANG_C99, file_, "kq", true, "", 0);

  auto* license_type = llvm::ArrayType::get(llvm::Type::getInt8Ty(*context_), 4);
  auto* license = new llvm::GlobalVariable(
      *module_, license_type, true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantDataArray::getString(*context_, "GPL", true), "_license");
  license->setSection("license");
  license->setAlignment(llvm::Align(1));
}

BpfModule::~BpfModule() = default;

llvm::DIType* BpfModule::intDi(uint32_t bytes) {
  auto it = int_di_.find(bytes);
  if (it != int_di_.end()) return it->second;
  return int_di_[bytes] = di_->createBasicType(bytes == 8 ? "long long unsigned int" : "int",
                                               bytes * 8, llvm::dwarf::DW_ATE_signed);
}

llvm::DIType* BpfModule::arrayOfIntsDi(uint32_t count) {
  llvm::DIType* element = intDi(4);
  llvm::DINodeArray subscripts = di_->getOrCreateArray({di_->getOrCreateSubrange(0, count)});
  return di_->createArrayType(static_cast<uint64_t>(count) * 32, 32, element, subscripts);
}

llvm::GlobalVariable* BpfModule::addMap(const MapSpec& spec) {
  return describeMap(declareMap(spec.name), spec);
}

llvm::GlobalVariable* BpfModule::declareMap(const std::string& name) {
  auto* ptr = llvm::PointerType::get(*context_, 0);
  // Every map definition has at most six members, each a pointer (see describeMap).
  auto* type = llvm::StructType::get(*context_, std::vector<llvm::Type*>(6, ptr));
  auto* global = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::ExternalLinkage,
                                          llvm::Constant::getNullValue(type), name);
  global->setSection(".maps");
  global->setAlignment(llvm::Align(8));
  return global;
}

llvm::GlobalVariable* BpfModule::describeMap(llvm::GlobalVariable* global, const MapSpec& spec) {
  // libbpf's BTF map definition: each `__uint(name, N)` is a member `int (*name)[N]`.
  std::vector<std::pair<std::string, uint32_t>> members = {
      {"type", static_cast<uint32_t>(spec.type)}, {"max_entries", spec.max_entries}};
  if (spec.key_size) members.emplace_back("key_size", spec.key_size);
  if (spec.value_size) members.emplace_back("value_size", spec.value_size);
  if (spec.flags) members.emplace_back("map_flags", spec.flags);
  // The IR type declared six pointers; BTF describes the members used, and the size of the
  // section's variable is what its BTF type says.
  auto* ptr = llvm::PointerType::get(*context_, 0);
  auto* type = llvm::StructType::get(*context_, std::vector<llvm::Type*>(members.size(), ptr));
  auto* fitted = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::ExternalLinkage,
                                          llvm::Constant::getNullValue(type), "");
  fitted->setSection(".maps");
  fitted->setAlignment(llvm::Align(8));
  fitted->takeName(global);
  global->replaceAllUsesWith(fitted);
  global->eraseFromParent();
  global = fitted;

  std::vector<llvm::Metadata*> di_members;
  for (size_t i = 0; i < members.size(); ++i) {
    auto* pointer = di_->createPointerType(arrayOfIntsDi(members[i].second), 64);
    di_members.push_back(di_->createMemberType(unit_, members[i].first, file_, 0, 64, 64, i * 64,
                                               llvm::DINode::FlagZero, pointer));
  }
  auto* di_struct = di_->createStructType(unit_, "", file_, 0, members.size() * 64, 64,
                                          llvm::DINode::FlagZero, nullptr,
                                          di_->getOrCreateArray(di_members));
  auto* expr = di_->createGlobalVariableExpression(unit_, spec.name, "", file_, 0, di_struct, false);
  global->addDebugInfo(expr);
  return global;
}

llvm::Function* BpfModule::addProgram(const std::string& name, const std::string& section,
                                      uint32_t offset) {
  llvm::Function* fn = addFunction(name, offset, /*local=*/false);
  fn->setSection(section);
  return fn;
}

llvm::Function* BpfModule::addPart(const std::string& name, uint32_t offset) {
  return addFunction(name, offset, /*local=*/true);
}

llvm::Function* BpfModule::addFunction(const std::string& name, uint32_t offset, bool local) {
  auto* ptr = llvm::PointerType::get(*context_, 0);
  auto* fn_type = llvm::FunctionType::get(llvm::Type::getInt32Ty(*context_), {ptr}, false);
  auto linkage = local ? llvm::GlobalValue::InternalLinkage : llvm::GlobalValue::ExternalLinkage;
  auto* fn = llvm::Function::Create(fn_type, linkage, name, *module_);
  fn->addFnAttr(llvm::Attribute::NoUnwind);  // no .eh_frame in the object
  fn->getArg(0)->setName("ctx");
  fn->setSubprogram(subprogram(name, offset, local));
  return fn;
}

llvm::DISubprogram* BpfModule::subprogram(const std::string& name, uint32_t offset, bool local) {
  // A subprogram with a named parameter: without it the kernel rejects the object's BTF. A
  // part is static in BTF too: the verifier checks it as part of its caller, with the
  // caller's context (a global function would be checked alone, from its BTF types).
  llvm::DIType* int_type = di_->createBasicType("int", 32, llvm::dwarf::DW_ATE_signed);
  llvm::DIType* void_ptr = di_->createPointerType(nullptr, 64);
  auto* sub_type = di_->createSubroutineType(di_->getOrCreateTypeArray({int_type, void_ptr}));
  uint32_t line = source_.lineColumn(offset).line;
  auto flags = llvm::DISubprogram::SPFlagDefinition;
  if (local) flags |= llvm::DISubprogram::SPFlagLocalToUnit;
  auto* sp = di_->createFunction(unit_, name, name, file_, line, sub_type, line,
                                 llvm::DINode::FlagPrototyped, flags);
  di_->createParameterVariable(sp, "ctx", 1, file_, line, void_ptr, true);
  return sp;
}

bool BpfModule::adoptPart(llvm::Function* fn, const std::string& name, const std::string& section,
                          uint32_t offset) {
  llvm::DISubprogram* old = fn->getSubprogram();
  for (llvm::BasicBlock& block : *fn) {
    for (llvm::Instruction& inst : block) {
      const llvm::DebugLoc& at = inst.getDebugLoc();
      if (at && (at->getScope() != old || at->getInlinedAt())) return false;
      if (llvm::isa<llvm::DbgInfoIntrinsic>(inst)) return false;
    }
  }
  llvm::DISubprogram* sp = subprogram(name, offset, /*local=*/false);
  for (llvm::BasicBlock& block : *fn) {
    for (llvm::Instruction& inst : block) {
      if (const llvm::DebugLoc& at = inst.getDebugLoc()) {
        inst.setDebugLoc(llvm::DILocation::get(*context_, at.getLine(), at.getCol(), sp));
      }
    }
  }
  fn->setName(name);
  fn->setLinkage(llvm::GlobalValue::ExternalLinkage);
  fn->setDSOLocal(false);
  fn->setSection(section);
  fn->setSubprogram(sp);
  return true;
}

void BpfModule::dropProgram(const std::string& name) {
  llvm::Function* fn = module_->getFunction(name);
  if (!fn) return;
  helpers_.erase(fn);
  fn->eraseFromParent();
}

std::vector<int> BpfModule::helpersOf(const llvm::Function* fn) const {
  auto it = helpers_.find(fn);
  return it == helpers_.end() ? std::vector<int>{} : it->second;
}

llvm::Value* BpfModule::callHelper(llvm::IRBuilder<>& b, Helper helper, llvm::Type* ret,
                                   std::vector<llvm::Value*> args) {
  if (llvm::BasicBlock* block = b.GetInsertBlock()) {
    std::vector<int>& used = helpers_[block->getParent()];
    if (std::find(used.begin(), used.end(), static_cast<int>(helper)) == used.end()) {
      used.push_back(static_cast<int>(helper));
    }
  }
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* fn_type = llvm::FunctionType::get(ret, types, false);
  auto* address = llvm::ConstantExpr::getIntToPtr(b.getInt64(static_cast<int>(helper)),
                                                  llvm::PointerType::get(*context_, 0));
  return b.CreateCall(fn_type, address, args);
}

llvm::DebugLoc BpfModule::location(llvm::DISubprogram* scope, uint32_t offset) {
  LineColumn at = source_.lineColumn(offset);
  return llvm::DILocation::get(*context_, at.line, at.column, scope);
}

Result<EmittedObject> BpfModule::emit(bool want_ir, bool want_asm) {
  di_->finalize();
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(*module_, &problem_stream)) {
    return Error{"kq generated invalid LLVM IR (a bug in kq):\n" + problems};
  }
  auto tm = bpfTargetMachine();
  if (!tm) return tm.error();

  // -O2, with the BPF target's own passes (CO-RE lowering needs them).
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(*tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(*module_, mam);

  EmittedObject out;
  if (want_ir) {
    llvm::raw_string_ostream ir(out.ir);
    module_->print(ir, nullptr);
  }
  if (want_asm) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*module_);
    auto text = codegen(**tm, *copy, llvm::CGFT_AssemblyFile);
    if (!text) return text.error();
    if (!problems_.empty()) return Error{problems_.front().message};
    out.asm_text = text.take();
  }
  auto elf = codegen(**tm, *module_, llvm::CGFT_ObjectFile);
  if (!elf) return elf.error();
  if (!problems_.empty()) return Error{problems_.front().message};
  out.elf.assign(elf->begin(), elf->end());
  return out;
}

}  // namespace kq::lower
