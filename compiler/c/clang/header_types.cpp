// `use "myapp.h"`: the structs, unions, enums and typedefs a header defines, as BTF. The
// header is parsed once to list them (those of system headers it includes are left out:
// they would clash with the kernel's `uint32_t` and come along anyway where used); then a
// translation unit of kq's own declares a pointer to each, `__kq_type_N`, which Clang
// compiles for the host (the types are laid out as the program's are, with the host's
// system headers) into LLVM IR with debug information; that module, holding only those
// variables, is then emitted for the BPF target, whose BTF writer describes each type
// completely. kq reads the object back (compiler/c/header_types.cpp on its side).
#include "compiler/c/clang/header_types.h"

#include <memory>
#include <mutex>
#include <vector>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/FrontendActions.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/c/clang/c_compiler.h"

namespace kq::c {
namespace {

/// How each type the header defines is named in C: `struct req`, `enum color`, `req_t`.
class DefinedTypes : public clang::ASTConsumer {
 public:
  explicit DefinedTypes(std::vector<std::string>& out) : out_(out) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    const clang::SourceManager& sm = context.getSourceManager();
    for (const clang::Decl* decl : context.getTranslationUnitDecl()->decls()) {
      clang::SourceLocation at = decl->getLocation();
      if (at.isInvalid() || sm.isInSystemHeader(at) || sm.isWrittenInMainFile(at)) continue;
      if (const auto* tag = llvm::dyn_cast<clang::TagDecl>(decl)) {
        if (!tag->isCompleteDefinition() || tag->getName().empty()) continue;
        const char* kind = tag->isStruct() ? "struct " : tag->isUnion() ? "union " : tag->isEnum() ? "enum " : nullptr;
        if (kind) out_.push_back(kind + tag->getName().str());
      } else if (const auto* td = llvm::dyn_cast<clang::TypedefNameDecl>(decl)) {
        out_.push_back(td->getName().str());
      }
    }
  }

 private:
  std::vector<std::string>& out_;
};

class ListTypes : public clang::ASTFrontendAction {
 public:
  explicit ListTypes(std::vector<std::string>& out) : out_(out) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef) override {
    return std::make_unique<DefinedTypes>(out_);
  }

 private:
  std::vector<std::string>& out_;
};

/// Emits `module` (global variables and their debug information) as a BPF object.
std::string emitBpfObject(llvm::Module& module, const std::string& path) {
  initializeBpfTarget();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget("bpfel", error);
  if (!target) return error;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      "bpfel", "generic", "", llvm::TargetOptions(), std::nullopt));
  module.setTargetTriple("bpfel");
  module.setDataLayout(machine->createDataLayout());
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) return "cannot write " + path + ": " + ec.message();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, llvm::CGFT_ObjectFile)) {
    return "LLVM cannot emit a BPF object";
  }
  passes.run(module);
  return "";
}

std::vector<CDiagnostic> errorsOf(DiagnosticCollector& diags) {
  std::vector<CDiagnostic> out;
  bool in_error = false;
  for (CDiagnostic& d : diags.diagnostics) {
    if (d.level == CDiagnostic::Level::Error) in_error = true;
    if (d.level == CDiagnostic::Level::Warning) in_error = false;
    if (in_error) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

HeaderTypesResult compileHeaderTypes(const CInput& input, const std::string& object_path) {
  HeaderTypesResult result;
  std::string dir = input.directory.empty() ? "." : input.directory;
  CUnit unit{dir + "/<kq types>.c", "#include \"" + input.file + "\"\n", {"-g", "-O0", "-w"}};

  std::vector<std::string> names;
  {
    DiagnosticCollector diags;
    std::unique_ptr<clang::CompilerInstance> compiler = makeCompiler(unit, diags);
    if (compiler) {
      ListTypes list(names);
      compiler->ExecuteAction(list);
    }
    if (diags.file_not_found && !diags.diagnostics.empty() &&
        diags.diagnostics.front().file == unit.path) {
      return result;
    }
    result.found = true;
    result.diagnostics = errorsOf(diags);
    if (!compiler && result.diagnostics.empty()) {
      result.diagnostics.push_back({CDiagnostic::Level::Error, "", 0, 0,
                                    "Clang's driver refused kq's arguments"});
    }
    if (!result.diagnostics.empty()) return result;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    unit.text += names[i] + " *__kq_type_" + std::to_string(i) + ";\n";
  }
  DiagnosticCollector diags;
  std::unique_ptr<clang::CompilerInstance> compiler = makeCompiler(unit, diags);
  llvm::LLVMContext context;
  clang::EmitLLVMOnlyAction emit(&context);
  if (compiler) compiler->ExecuteAction(emit);
  result.diagnostics = errorsOf(diags);
  if (!result.diagnostics.empty()) return result;
  std::unique_ptr<llvm::Module> module = emit.takeModule();
  std::string failure = module ? emitBpfObject(*module, object_path) : "Clang made no module";
  if (!failure.empty()) result.diagnostics.push_back({CDiagnostic::Level::Error, "", 0, 0, failure});
  return result;
}

}  // namespace kq::c
