#include "compiler/c/clang/c_compiler.h"

#include <clang/Basic/DiagnosticLex.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/Utils.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>
#include <llvm/TargetParser/Host.h>

namespace kq::c {

void DiagnosticCollector::HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                                           const clang::Diagnostic& info) {
  DiagnosticConsumer::HandleDiagnostic(level, info);
  if (level == clang::DiagnosticsEngine::Ignored) return;
  CDiagnostic d;
  d.level = level == clang::DiagnosticsEngine::Note      ? CDiagnostic::Level::Note
            : level == clang::DiagnosticsEngine::Warning ? CDiagnostic::Level::Warning
            : level == clang::DiagnosticsEngine::Remark  ? CDiagnostic::Level::Note
                                                         : CDiagnostic::Level::Error;
  llvm::SmallString<128> text;
  info.FormatDiagnostic(text);
  d.message = std::string(text);
  if (info.getID() == clang::diag::err_pp_file_not_found) file_not_found = true;
  bool in_main = false;
  if (info.hasSourceManager() && info.getLocation().isValid()) {
    const clang::SourceManager& sm = info.getSourceManager();
    clang::PresumedLoc at = sm.getPresumedLoc(sm.getFileLoc(info.getLocation()));
    if (at.isValid()) {
      d.file = at.getFilename();
      d.line = at.getLine();
      d.column = at.getColumn();
    }
    clang::SourceLocation expanded = sm.getExpansionLoc(info.getLocation());
    in_main = sm.isWrittenInMainFile(expanded);
    if (d.level == CDiagnostic::Level::Error && in_main) {
      main_file_error_lines.insert(sm.getExpansionLineNumber(expanded));
    }
  }
  diagnostics.push_back(std::move(d));
  from_main_file.push_back(in_main);
}

void initializeBpfTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeBPFTargetInfo();
    LLVMInitializeBPFTarget();
    LLVMInitializeBPFTargetMC();
    LLVMInitializeBPFAsmPrinter();
  });
}

std::vector<std::string> bpfTargetArgs() {
  std::string host = llvm::sys::getDefaultTargetTriple();
  std::string multiarch = host.substr(0, host.find('-')) + "-linux-gnu";
  return {"-target", "bpf", "-idirafter", "/usr/local/include", "-idirafter",
          "/usr/include/" + multiarch, "-idirafter", "/usr/include"};
}

std::unique_ptr<clang::CompilerInstance> makeCompiler(const CUnit& unit,
                                                      DiagnosticCollector& diags) {
  // The driver finds the system include paths of the target (and GCC's, for the host) as
  // the clang binary would, from the resource directory of the libclang kq was built with.
  std::vector<std::string> args = {KQ_CLANG_BINARY, "-resource-dir", KQ_CLANG_RESOURCE_DIR,
                                   "-ferror-limit=0", "-fno-color-diagnostics"};
  if (unit.object_path.empty()) {
    args.push_back("-fsyntax-only");
  } else {
    args.insert(args.end(), {"-c", "-o", unit.object_path});
  }
  args.insert(args.end(), unit.args.begin(), unit.args.end());
  args.push_back("-x");
  args.push_back("c");
  args.push_back(unit.path);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  clang::CreateInvocationOptions options;
  options.Diags = clang::CompilerInstance::createDiagnostics(new clang::DiagnosticOptions, &diags,
                                                             /*ShouldOwnClient=*/false);
  options.ProbePrecompiled = false;
  std::shared_ptr<clang::CompilerInvocation> invocation = clang::createInvocation(argv, options);
  if (!invocation) return nullptr;
  invocation->getFrontendOpts().DisableFree = false;  // a session compiles many times
  if (!unit.object_path.empty()) invocation->getFrontendOpts().OutputFile = unit.object_path;
  invocation->getDiagnosticOpts().ShowCarets = false;  // and no "N errors generated" on stderr
  invocation->getPreprocessorOpts().addRemappedFile(
      unit.path, llvm::MemoryBuffer::getMemBufferCopy(unit.text, unit.path).release());
  auto compiler = std::make_unique<clang::CompilerInstance>();
  compiler->setInvocation(std::move(invocation));
  compiler->createDiagnostics(&diags, /*ShouldOwnClient=*/false);
  return compiler;
}

}  // namespace kq::c
