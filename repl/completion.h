// Tab completion in the interactive session, as pure functions of the session's state and
// the text before the cursor: keywords; kernel functions after `trace`, `join`, `,` and `->`
// (globs too); tracepoint categories then events; syscalls; the arguments of the probe being
// written; struct members after `->` and `.`, typed by the checker; builtins, stdlib, `let`
// and `fn` names; files after `uprobe:`; stdlib modules after `use`; commands and what
// they take.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "compiler/btf/btf.h"
#include "host/kernel_info.h"

namespace kq::repl {

struct Completion {
  /// Where the word being completed starts in the text; candidates replace text[start:].
  size_t start = 0;
  /// Whole replacements, sorted, without repeats.
  std::vector<std::string> candidates;
  /// Whether a single candidate gets a space after it (not `tracepoint:net:`, not `dir/`).
  bool space_after = true;
};

/// What completion knows of the session.
struct CompletionContext {
  const btf::Btf& btf;
  host::KernelInfo& kernel;
  /// The declarations kept so far (`let`, `fn`, `use` lines).
  const std::string& decls;
};

/// The candidates for the word that ends at the end of `text` (the input before the cursor,
/// lines joined with '\n').
Completion complete(const CompletionContext& context, const std::string& text);

}  // namespace kq::repl
