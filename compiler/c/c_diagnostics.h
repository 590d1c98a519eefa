// Clang's diagnostics of a C file or header, through kq's renderer: each error at its
// file:line:col with the line and a caret, its notes attached, as a kq diagnostic.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/c/c_frontend.h"
#include "compiler/diag/diagnostic.h"
#include "compiler/diag/source.h"

namespace kq::c {

/// Reports the errors of `diagnostics` (and their notes) as `kind`; one without a place in
/// a readable file is reported at `fallback`, and `context` (the kq expression that read
/// the C) gets a note there. Returns whether any error was reported.
bool reportCDiagnostics(const std::vector<CDiagnostic>& diagnostics, DiagKind kind,
                        SourceRange fallback, std::string_view context, SourceManager& sources,
                        Diagnostics& diags);

}  // namespace kq::c
