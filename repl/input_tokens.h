// The tokens of input still being typed at the prompt: kq's lexical rules (grammar/KqLexer.g4)
// loosely applied, so that any prefix of a query splits into words, numbers, strings and
// operators, an unterminated string or an unbalanced parenthesis included. Completion and the
// decision to read another line use it; the parser proper never sees it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kq::repl {

struct InputToken {
  enum class Kind { Word, Number, String, Operator, Path };
  Kind kind;
  std::string_view text;
  size_t begin = 0;  // byte offsets in the input
  size_t end = 0;
  bool unterminated = false;  // a string without its closing quote

  bool is(std::string_view s) const { return kind != Kind::String && text == s; }
  bool isWord() const { return kind == Kind::Word; }
};

/// The tokens of `text` (which must outlive them); comments and blanks are dropped. After
/// `uprobe:` (or `uretprobe:`) a binary's path is one Path token.
std::vector<InputToken> inputTokens(std::string_view text);

/// Whether a query or declaration stops where more must follow: inside a parenthesis,
/// bracket or brace, or after an operator or a word that cannot end one (`where`, `and`,
/// `group by`, `=`). Commands (`info`, `list`, ...) are always finished.
bool unfinished(std::string_view text);

/// The tokens' text, spaced as written except that blanks and line ends become one space.
std::string joinTokens(std::string_view text, const std::vector<InputToken>& tokens,
                       size_t first, size_t last);

}  // namespace kq::repl
