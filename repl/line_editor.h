// The line editor at a terminal: libedit, driven a key at a time (its unbuffered mode) so
// that the session can print its background jobs' output above the line being edited and
// then draw the line again; Tab completes from kq's completion (completion.h); history is
// kept in a file.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "repl/completion.h"
#include "repl/line_input.h"

namespace kq::repl {

/// Completes the text before the cursor (the input so far, every line of it).
using CompleteFn = std::function<Completion(const std::string& text)>;

/// A line editor on standard input and output; `history_file` empty: no history kept.
std::unique_ptr<LineInput> lineEditor(const std::string& history_file, CompleteFn complete,
                                      std::ostream& err);

}  // namespace kq::repl
