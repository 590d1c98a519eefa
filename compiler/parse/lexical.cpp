#include "compiler/parse/lexical.h"

#include <fmt/format.h>

#include "KqLexer.h"
#include "compiler/diag/utf8.h"
#include "compiler/parse/literals.h"

namespace kq::parse {
namespace {

std::string describeCharacter(std::string_view text) {
  auto c = static_cast<unsigned char>(text[0]);
  if (c == 0) return "NUL byte";
  if (c < 0x20 || c == 0x7F) return fmt::format("control character 0x{:02x}", c);
  return fmt::format("`{}`", text);
}

}  // namespace

void reportLiteralError(const LiteralError& error, SourceRange token, Diagnostics& diags) {
  SourceRange at{token.file, token.begin + error.begin, token.begin + error.end};
  Diagnostic& diag = diags.report(error.kind, at, error.message);
  if (!error.hint.empty()) diag.note(error.hint);
}

bool checkInputText(const SourceFile& file, FileId id, Diagnostics& diags) {
  const std::string& text = file.text();
  if (text.size() > kMaxInputBytes) {
    diags.report(DiagKind::InputTooLarge, {id, 0, 0},
                 fmt::format("the input is larger than {} KiB, the most kq reads",
                             kMaxInputBytes / 1024))
        .note("split the script into several files and `use` them");
    return false;
  }
  for (size_t i = 0; i < text.size();) {
    size_t len = validUtf8Length(text, i);
    if (len == 0) {
      auto at = static_cast<uint32_t>(i);
      diags.report(DiagKind::InvalidUtf8, {id, at, at + 1},
                   fmt::format("byte 0x{:02x} is not valid UTF-8",
                               static_cast<unsigned char>(text[i])))
          .note("kq reads scripts as UTF-8 text");
      return false;
    }
    i += len;
  }
  return true;
}

void checkTokens(const std::vector<antlr4::Token*>& tokens, const TokenSource& source,
                 Diagnostics& diags) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    antlr4::Token* token = tokens[i];
    switch (token->getType()) {
      case kqgrammar::KqLexer::BAD_CHAR: {
        // A run of adjacent bad characters is one mistake, reported once.
        size_t last = i;
        while (last + 1 < tokens.size() &&
               tokens[last + 1]->getType() == kqgrammar::KqLexer::BAD_CHAR &&
               tokens[last + 1]->getStartIndex() == tokens[last]->getStopIndex() + 1) {
          ++last;
        }
        SourceRange at = source.range(token, tokens[last]);
        std::string_view first = source.text(token);
        Diagnostic& diag = diags.report(
            DiagKind::UnexpectedCharacter, at,
            fmt::format("unexpected {} in the query", describeCharacter(first)));
        if (first == "'") diag.note("strings take double quotes: \"text\"");
        if (first == "$" || first == "@") {
          diag.note("kq names need no sigil: write `pid`, not `$pid` or `@pid`");
        }
        i = last;
        break;
      }
      case kqgrammar::KqLexer::NUMBER: {
        // Right before a `:`, it may name a kernel module (`9p:v9fs_file_read_iter`): the
        // builder checks it where it is a number.
        bool before_colon = i + 1 < tokens.size() && tokens[i + 1]->getType() == kqgrammar::KqLexer::COLON &&
                            tokens[i + 1]->getStartIndex() == token->getStopIndex() + 1;
        if (before_colon) break;
        auto decoded = decodeNumber(source.text(token));
        if (auto* error = std::get_if<LiteralError>(&decoded)) {
          reportLiteralError(*error, source.range(token), diags);
        }
        break;
      }
      case kqgrammar::KqLexer::STRING: {
        for (const LiteralError& error : decodeString(source.text(token)).errors) {
          reportLiteralError(error, source.range(token), diags);
        }
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace kq::parse
