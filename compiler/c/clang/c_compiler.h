// A clang::CompilerInstance for one piece of C kq reads: a main file of kq's own text (it
// `#include`s the user's header, or is the user's C file) with the system include paths
// Clang's driver finds for the target, and Clang's diagnostics collected, not printed.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <clang/Basic/Diagnostic.h>
#include <clang/Frontend/CompilerInstance.h>

#include "compiler/c/c_frontend.h"

namespace kq::c {

/// Clang's diagnostics as CDiagnostics, with what kq decides on: whether an `#include`d
/// file was missing, and the lines of the main file that an error expanded from.
class DiagnosticCollector : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic& info) override;

  std::vector<CDiagnostic> diagnostics;
  std::set<uint32_t> main_file_error_lines;
  /// For each of `diagnostics`: whether it expanded from the main file (kq's own text).
  std::vector<bool> from_main_file;
  bool file_not_found = false;
};

struct CUnit {
  /// The main file's path: its directory is where quoted `#include`s look first. The file
  /// need not exist: `text` is its content.
  std::string path;
  std::string text;
  /// Driver arguments besides the file (`-target bpf`, `-O2`, `-g`).
  std::vector<std::string> args;
  /// Where the object goes; "" for a syntax check only.
  std::string object_path = "";
};

/// Driver arguments for the BPF target: its layout is the 64-bit hosts' (LP64), and the
/// host's system headers are found after Clang's own.
std::vector<std::string> bpfTargetArgs();

/// Registers LLVM's BPF target (for objects), once.
void initializeBpfTarget();

/// A compiler ready to run an action on `unit`, reporting to `diags`; null if Clang's
/// driver refused the arguments (said in `diags`).
std::unique_ptr<clang::CompilerInstance> makeCompiler(const CUnit& unit, DiagnosticCollector& diags);

}  // namespace kq::c
