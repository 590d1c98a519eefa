// `macros(header, prefix)`: the object-like macros of a header whose names start with the
// prefix, evaluated by Clang as integer constant expressions. Two passes over the header:
// the preprocessor lists the macros in the order they are defined (an alias defined later,
// `CAP_LAST_CAP`, does not rename an earlier one of the same value), then each becomes an
// enumerator's value in a translation unit of kq's own, one per line, so Clang evaluates
// macros defined by other macros and an error (a string, a cast to a pointer, a function
// call) skips only the macro on its line.
#include "compiler/c/clang/macros.h"

#include <map>
#include <memory>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>

#include "compiler/c/clang/c_compiler.h"

namespace kq::c {
namespace {

constexpr const char* kEnumeratorPrefix = "__kq_macro_";

/// Records the object-like macros whose names start with a prefix as they are defined.
class MacroLister : public clang::PPCallbacks {
 public:
  MacroLister(const clang::SourceManager& sm, std::string prefix, std::vector<std::string>& out,
              std::string& header, std::vector<std::string>& included)
      : sm_(sm), prefix_(std::move(prefix)), out_(out), header_(header), included_(included) {}

  void InclusionDirective(clang::SourceLocation hash, const clang::Token&, llvm::StringRef,
                          bool, clang::CharSourceRange, clang::OptionalFileEntryRef file,
                          llvm::StringRef, llvm::StringRef, const clang::Module*,
                          clang::SrcMgr::CharacteristicKind) override {
    if (!file) return;
    if (header_.empty() && sm_.isWrittenInMainFile(hash)) {
      header_ = file->getName().str();
    } else {
      included_.push_back(file->getName().str());
    }
  }

  void MacroDefined(const clang::Token& name, const clang::MacroDirective* md) override {
    std::string text = name.getIdentifierInfo()->getName().str();
    if (text.compare(0, prefix_.size(), prefix_) != 0) return;
    const clang::MacroInfo* info = md->getMacroInfo();
    if (!info->isObjectLike() || info->isBuiltinMacro()) return;
    // Not the compiler's own (`__STDC__`) nor the command line's.
    if (sm_.isWrittenInBuiltinFile(name.getLocation()) ||
        sm_.isWrittenInCommandLineFile(name.getLocation())) {
      return;
    }
    for (const std::string& seen : out_) {
      if (seen == text) return;  // redefined: keeps its first place
    }
    out_.push_back(std::move(text));
  }

 private:
  const clang::SourceManager& sm_;
  std::string prefix_;
  std::vector<std::string>& out_;
  std::string& header_;
  std::vector<std::string>& included_;
};

class ListMacros : public clang::PreprocessOnlyAction {
 public:
  ListMacros(std::string prefix, std::vector<std::string>& out, std::string& header,
             std::vector<std::string>& included)
      : prefix_(std::move(prefix)), out_(out), header_(header), included_(included) {}

 protected:
  bool BeginSourceFileAction(clang::CompilerInstance& ci) override {
    clang::Preprocessor& pp = ci.getPreprocessor();
    pp.addPPCallbacks(std::make_unique<MacroLister>(ci.getSourceManager(), prefix_, out_, header_,
                                                     included_));
    return PreprocessOnlyAction::BeginSourceFileAction(ci);
  }

 private:
  std::string prefix_;
  std::vector<std::string>& out_;
  std::string& header_;
  std::vector<std::string>& included_;
};

/// Reads back the values of the enumerators `__kq_macro_N` (N: the macro's index).
class EnumeratorReader : public clang::ASTConsumer {
 public:
  explicit EnumeratorReader(std::map<size_t, int64_t>& out) : out_(out) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    for (const clang::Decl* decl : context.getTranslationUnitDecl()->decls()) {
      const auto* e = llvm::dyn_cast<clang::EnumDecl>(decl);
      if (!e) continue;
      for (const clang::EnumConstantDecl* c : e->enumerators()) {
        llvm::StringRef name = c->getName();
        if (c->isInvalidDecl() || !name.consume_front(kEnumeratorPrefix)) continue;
        size_t index = 0;
        if (name.getAsInteger(10, index)) continue;
        const llvm::APSInt& v = c->getInitVal();
        if (v.getMinSignedBits() > 64 && !(v.isUnsigned() && v.getActiveBits() <= 64)) continue;
        out_[index] = v.isUnsigned() ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
      }
    }
  }

 private:
  std::map<size_t, int64_t>& out_;
};

class EvaluateMacros : public clang::ASTFrontendAction {
 public:
  explicit EvaluateMacros(std::map<size_t, int64_t>& out) : out_(out) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef) override {
    return std::make_unique<EnumeratorReader>(out_);
  }

 private:
  std::map<size_t, int64_t>& out_;
};

std::string includeLine(const CInput& input) {
  return "#include \"" + input.file + "\"\n";
}

std::string mainPath(const CInput& input) {
  std::string dir = input.directory.empty() ? "." : input.directory;
  return dir + "/<kq macros>.c";
}

}  // namespace

MacroResult evaluateMacros(const CInput& input, const std::string& prefix) {
  MacroResult result;
  CUnit unit{mainPath(input), includeLine(input), {"-w"}};

  std::vector<std::string> names;
  {
    DiagnosticCollector diags;
    std::unique_ptr<clang::CompilerInstance> compiler = makeCompiler(unit, diags);
    if (!compiler) {
      result.found = true;
      result.diagnostics = std::move(diags.diagnostics);
      return result;
    }
    ListMacros list(prefix, names, result.path, result.included);
    compiler->ExecuteAction(list);
    if (diags.file_not_found && diags.diagnostics.size() >= 1 &&
        diags.diagnostics.front().file == unit.path) {
      return result;  // the header itself is missing
    }
    result.found = true;
    for (CDiagnostic& d : diags.diagnostics) {
      if (d.level == CDiagnostic::Level::Error) result.diagnostics.push_back(std::move(d));
    }
    if (!result.diagnostics.empty()) return result;
  }
  result.with_prefix = static_cast<uint32_t>(names.size());
  if (names.empty()) return result;

  // Line 1 includes the header; the macro of index N is on line N + 2.
  for (size_t i = 0; i < names.size(); ++i) {
    unit.text += "enum { " + std::string(kEnumeratorPrefix) + std::to_string(i) + " = (" +
                 names[i] + ") };\n";
  }
  DiagnosticCollector diags;
  std::unique_ptr<clang::CompilerInstance> compiler = makeCompiler(unit, diags);
  if (!compiler) {
    result.diagnostics = std::move(diags.diagnostics);
    return result;
  }
  std::map<size_t, int64_t> values;
  EvaluateMacros evaluate(values);
  compiler->ExecuteAction(evaluate);
  // Errors of the header itself (not of kq's lines), with the notes that follow them.
  bool header_error = false;
  for (size_t i = 0; i < diags.diagnostics.size(); ++i) {
    CDiagnostic& d = diags.diagnostics[i];
    if (d.level == CDiagnostic::Level::Error) header_error = !diags.from_main_file[i];
    if (header_error && d.level != CDiagnostic::Level::Warning) {
      result.diagnostics.push_back(std::move(d));
    }
  }
  if (!result.diagnostics.empty()) return result;
  for (size_t i = 0; i < names.size(); ++i) {
    auto value = values.find(i);
    if (value == values.end() || diags.main_file_error_lines.count(static_cast<uint32_t>(i + 2))) {
      continue;
    }
    result.macros.push_back({names[i], value->second});
  }
  return result;
}

}  // namespace kq::c
