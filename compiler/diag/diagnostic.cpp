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
  for (const DiagNote& n : notes) {
    if (n.range && n.range->begin == at.begin && n.range->file == at.file && n.message == text) {
      return *this;
    }
  }
  notes.push_back({at, std::move(text)});
  return *this;
}

Diagnostic& Diagnostic::note(std::string text) {
  for (const DiagNote& n : notes) {
    if (!n.range && n.message == text) return *this;
  }
  notes.push_back({std::nullopt, std::move(text)});
  return *this;
}

Diagnostic& Diagnostics::report(DiagKind kind, SourceRange range, std::string message) {
  // The same mistake found twice (a clause checked once per probe) is reported once.
  for (Diagnostic& old : diagnostics_) {
    if (old.kind == kind && old.range.file == range.file && old.range.begin == range.begin &&
        old.range.end == range.end && old.message == message) {
      return old;
    }
  }
  Severity severity = diagKindSeverity(kind);
  if (severity == Severity::Error) ++error_count_;
  diagnostics_.push_back({kind, severity, range, std::move(message), {}});
  return diagnostics_.back();
}

}  // namespace kq
