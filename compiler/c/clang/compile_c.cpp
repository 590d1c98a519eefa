// `use c "helpers.c"`: a C file compiled for the BPF target at -O2 into LLVM bitcode (the
// plugin's LLVM is not kq's: code crosses as bitcode, which kq parses into its own context
// and links into the query's module), with the signatures of its external functions read
// from Clang's AST in the same run, so kq checks calls with C's own types (signedness
// included, which LLVM IR does not keep).
#include "compiler/c/clang/compile_c.h"

#include <fstream>
#include <optional>
#include <memory>
#include <sstream>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/MultiplexConsumer.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/c/clang/c_compiler.h"

namespace kq::c {
namespace {

CScalar scalarOf(clang::QualType type, const clang::ASTContext& context) {
  CScalar out;
  out.spelling = type.getAsString();
  clang::QualType canonical = type.getCanonicalType();
  if (canonical->isVoidType()) {
    out.kind = CScalar::Kind::Void;
  } else if (canonical->isIntegralOrEnumerationType()) {
    out.kind = CScalar::Kind::Int;
    out.bytes = static_cast<uint32_t>(context.getTypeSize(canonical) / 8);
    out.is_signed = canonical->isSignedIntegerOrEnumerationType();
  } else if (canonical->isPointerType()) {
    out.kind = CScalar::Kind::Pointer;
    out.bytes = 8;
  }
  return out;
}

/// Clang's errors (each with the notes that follow it), or, when its driver refused the
/// arguments and said nothing, that.
std::vector<CDiagnostic> errorsOf(DiagnosticCollector& diags, bool compiler_made) {
  std::vector<CDiagnostic> out;
  bool in_error = false;
  for (CDiagnostic& d : diags.diagnostics) {
    if (d.level == CDiagnostic::Level::Error) in_error = true;
    if (d.level == CDiagnostic::Level::Warning) in_error = false;
    if (in_error) out.push_back(std::move(d));
  }
  if (!compiler_made && out.empty()) {
    out.push_back({CDiagnostic::Level::Error, "", 0, 0, "Clang's driver refused kq's arguments"});
  }
  return out;
}

/// The signatures of the main file's function definitions with external linkage, as the
/// parser hands each top-level declaration over (before code generation sees it).
class Signatures : public clang::ASTConsumer {
 public:
  explicit Signatures(std::vector<CFunctionSignature>& out) : out_(out) {}

  void Initialize(clang::ASTContext& context) override { context_ = &context; }

  bool HandleTopLevelDecl(clang::DeclGroupRef group) override {
    const clang::SourceManager& sm = context_->getSourceManager();
    for (const clang::Decl* decl : group) {
      const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(decl);
      if (!fn || !fn->doesThisDeclarationHaveABody() || !sm.isWrittenInMainFile(fn->getLocation()) ||
          !fn->isExternallyVisible()) {
        continue;
      }
      CFunctionSignature sig;
      sig.name = fn->getNameAsString();
      sig.return_type = scalarOf(fn->getReturnType(), *context_);
      for (const clang::ParmVarDecl* p : fn->parameters()) {
        sig.params.push_back(scalarOf(p->getType(), *context_));
      }
      sig.line = sm.getExpansionLineNumber(fn->getLocation());
      out_.push_back(std::move(sig));
    }
    return true;
  }

 private:
  std::vector<CFunctionSignature>& out_;
  clang::ASTContext* context_ = nullptr;
};

/// Code generation, with the signatures read from the same AST.
class CompileWithSignatures : public clang::EmitLLVMOnlyAction {
 public:
  CompileWithSignatures(llvm::LLVMContext* context, std::vector<CFunctionSignature>& out)
      : EmitLLVMOnlyAction(context), out_(out) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci,
                                                        llvm::StringRef file) override {
    std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
    consumers.push_back(std::make_unique<Signatures>(out_));
    consumers.push_back(EmitLLVMOnlyAction::CreateASTConsumer(ci, file));
    return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
  }

 private:
  std::vector<CFunctionSignature>& out_;
};

/// The C file `input` names, relative to its directory.
std::string pathOf(const CInput& input) {
  if (!input.file.empty() && input.file[0] != '/' && !input.directory.empty()) {
    return input.directory + "/" + input.file;
  }
  return input.file;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CCompileResult compileCFile(const CInput& input) {
  CCompileResult result;
  std::string path = pathOf(input);
  std::optional<std::string> text = readFile(path);
  if (!text) return result;
  result.found = true;
  result.path = path;

  std::vector<std::string> args = bpfTargetArgs();
  args.insert(args.end(), {"-O2", "-Wall", "-D__BPF_TRACING__"});
  CUnit unit{path, std::move(*text), args};
  DiagnosticCollector diags;
  std::unique_ptr<clang::CompilerInstance> compiler = makeCompiler(unit, diags);
  llvm::LLVMContext context;
  CompileWithSignatures action(&context, result.functions);
  if (compiler) compiler->ExecuteAction(action);
  result.diagnostics = errorsOf(diags, compiler != nullptr);
  if (!result.diagnostics.empty()) return result;
  std::unique_ptr<llvm::Module> module = action.takeModule();
  if (!module) {
    result.diagnostics.push_back({CDiagnostic::Level::Error, path, 0, 0, "Clang made no module"});
    return result;
  }
  llvm::raw_string_ostream out(result.bitcode);
  llvm::WriteBitcodeToFile(*module, out);
  out.flush();
  return result;
}

CObjectResult compileCObject(const CInput& input, const std::vector<std::string>& extra,
                             const std::string& object_path) {
  CObjectResult result;
  std::string path = pathOf(input);
  std::optional<std::string> text = readFile(path);
  if (!text) return result;
  result.found = true;
  std::vector<std::string> args = bpfTargetArgs();
  args.insert(args.end(), {"-O2", "-g"});
  args.insert(args.end(), extra.begin(), extra.end());
  CUnit unit{path, std::move(*text), args, object_path};
  DiagnosticCollector diags;
  std::unique_ptr<clang::CompilerInstance> compiler = makeCompiler(unit, diags);
  if (compiler) {
    initializeBpfTarget();
    clang::EmitObjAction emit;
    compiler->ExecuteAction(emit);
  }
  result.diagnostics = errorsOf(diags, compiler != nullptr);
  return result;
}

}  // namespace kq::c
