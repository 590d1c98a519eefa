// Typed diagnostics: mistakes in a user's query, each with a kind from kinds.def, a source
// range and optional notes. Internal and system failures are not diagnostics; they travel as
// error values (see compiler/diag/result.h).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diag/source.h"

namespace kq {

enum class DiagKind : uint16_t {
#define KQ_DIAG(Name, Severity) Name,
#include "compiler/diag/kinds.def"
#undef KQ_DIAG
};

enum class Severity : uint8_t { Error, Warning, Note };

/// Every kind, in table order.
const std::vector<DiagKind>& allDiagKinds();
std::string_view diagKindName(DiagKind kind);
Severity diagKindSeverity(DiagKind kind);

/// A note attached to a diagnostic: more context at another place ("to match this `(`"),
/// or, without a range, a hint ("did you mean `len`?").
struct DiagNote {
  std::optional<SourceRange> range;
  std::string message;
};

struct Diagnostic {
  DiagKind kind;
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<DiagNote> notes;

  Diagnostic& note(SourceRange at, std::string message);
  Diagnostic& note(std::string message);
};

/// Collects the diagnostics of one compilation, in the order they were reported.
class Diagnostics {
 public:
  /// Reports a diagnostic of `kind` (its severity comes from kinds.def); chain `.note()`
  /// on the result to add notes (the reference stays valid). Reporting an identical
  /// diagnostic again returns the first.
  Diagnostic& report(DiagKind kind, SourceRange range, std::string message);

  bool hasErrors() const { return error_count_ > 0; }
  size_t errorCount() const { return error_count_; }
  const std::deque<Diagnostic>& all() const { return diagnostics_; }

 private:
  // A deque: a reported Diagnostic stays where it is while more are reported, so a caller
  // may add notes to it after looking further.
  std::deque<Diagnostic> diagnostics_;
  size_t error_count_ = 0;
};

}  // namespace kq
