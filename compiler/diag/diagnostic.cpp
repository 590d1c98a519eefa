#include "compiler/diag/diagnostic.h"

namespace kq {
namespace {

struct KindInfo {
  DiagKind kind;
  std::string_view name;
  Severity severity;
};

constexpr KindInfo kKinds[] = {
#define KQ_DIAG(Name, Sev) {DiagKind::Name, #Name, Severity::Sev},
#include "compiler/diag/kinds.def"
#undef KQ_DIAG
};

}  // namespace

const std::vector<DiagKind>& allDiagKinds() {
  static const std::vector<DiagKind> kinds = [] {
    std::vector<DiagKind> out;
    for (const KindInfo& info : kKinds) out.push_back(info.kind);
    return out;
  }();
  return kinds;
}

std::string_view diagKindName(DiagKind kind) { return kKinds[static_cast<size_t>(kind)].name; }

Severity diagKindSeverity(DiagKind kind) {
  return kKinds[static_cast<size_t>(kind)].severity;
}

Diagnostic& Diagnostic::note(SourceRange at, std::string text) {
  notes.push_back({at, std::move(text)});
  return *this;
}

Diagnostic& Diagnostic::note(std::string text) {
  notes.push_back({std::nullopt, std::move(text)});
  return *this;
}

Diagnostic& Diagnostics::report(DiagKind kind, SourceRange range, std::string message) {
  Severity severity = diagKindSeverity(kind);
  if (severity == Severity::Error) ++error_count_;
  diagnostics_.push_back({kind, severity, range, std::move(message), {}});
  return diagnostics_.back();
}

}  // namespace kq
