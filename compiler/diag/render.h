// Prints diagnostics the way compilers do:
//
//   query.kq:1:42: error: expected an expression after `>` [ExpectedExpression]
//   trace ip_send_skb(skb) where skb->len >
//                                          ^
#pragma once

#include <ostream>

#include "compiler/diag/diagnostic.h"

namespace kq {

struct RenderOptions {
  bool color = false;
  /// Source lines longer than this many characters are shown as a window around the caret.
  uint32_t max_line_width = 120;
};

void renderDiagnostic(const Diagnostic& diag, const SourceManager& sources, std::ostream& out,
                      const RenderOptions& options = {});

/// Renders every diagnostic, then a summary line when there was more than one error.
void renderDiagnostics(const Diagnostics& diags, const SourceManager& sources, std::ostream& out,
                       const RenderOptions& options = {});

}  // namespace kq
