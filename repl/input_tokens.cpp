#include "repl/input_tokens.h"

#include <cctype>

namespace kq::repl {
namespace {

bool isWordStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The operators of two characters; every other character is an operator of one.
constexpr std::string_view kPairs[] = {"->", "<=", ">=", "==", "!=", "<<", ">>", "&&", "||"};

/// Words after which a query or declaration cannot end.
constexpr std::string_view kLeadingWords[] = {
    "trace", "where", "select", "group", "by", "every", "for", "limit", "join", "on",
    "within", "as",    "and",    "or",    "not", "let",  "fn",  "use",   "struct", "union", "enum"};
/// Operators after which an operand must come. Not `*` and `?` (a glob ends with them:
/// `trace tcp_*`), not `&` (a query ending with it runs in the background).
constexpr std::string_view kLeadingOperators[] = {
    "+", "-", "/", "%", "==", "!=", "<", ">", "<=", ">=", "<<", ">>", "&&", "||", "|", "^",
    "~", "!", "->", ".", ",", "=", ":"};
/// Commands of the interactive session, which are one line.
constexpr std::string_view kCommands[] = {"info", "list", "help", "decls", "jobs", "stop", "quit", "exit"};

template <size_t N>
bool among(std::string_view word, const std::string_view (&words)[N]) {
  for (std::string_view w : words) {
    if (w == word) return true;
  }
  return false;
}

}  // namespace

bool unfinished(std::string_view text) {
  std::vector<InputToken> tokens = inputTokens(text);
  if (tokens.empty() || (tokens[0].isWord() && among(tokens[0].text, kCommands))) return false;
  int depth = 0;
  for (const InputToken& t : tokens) {
    if (t.is("(") || t.is("[") || t.is("{")) ++depth;
    if (t.is(")") || t.is("]") || t.is("}")) depth = depth > 0 ? depth - 1 : 0;
  }
  if (depth > 0) return true;
  if (tokens[0].is("let") || tokens[0].is("fn")) {
    bool has_value = false;
    for (const InputToken& t : tokens) has_value = has_value || t.is("=");
    if (!has_value) return true;
  }
  const InputToken& last = tokens.back();
  if (last.kind == InputToken::Kind::Operator) return among(last.text, kLeadingOperators);
  // After `->` or `.` every word is a member's name.
  bool member = tokens.size() >= 2 && (tokens[tokens.size() - 2].is("->") || tokens[tokens.size() - 2].is("."));
  return last.isWord() && !member && among(last.text, kLeadingWords);
}

std::vector<InputToken> inputTokens(std::string_view text) {
  std::vector<InputToken> out;
  bool path_next = false;  // after `uprobe:`: a binary's path
  size_t i = 0;
  auto add = [&](InputToken::Kind kind, size_t begin, size_t end) {
    out.push_back({kind, text.substr(begin, end - begin), begin, end});
  };
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    size_t begin = i;
    if (path_next) {
      path_next = false;
      if (c != ':' && c != '(' && c != ')') {
        constexpr std::string_view kPathEnds = " \t\r\n:()";
        while (i < text.size() && kPathEnds.find(text[i]) == std::string_view::npos) ++i;
        add(InputToken::Kind::Path, begin, i);
        continue;
      }
    }
    if (isWordStart(c)) {
      while (i < text.size() && isWordChar(text[i])) ++i;
      add(InputToken::Kind::Word, begin, i);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < text.size() && isWordChar(text[i])) ++i;
      add(InputToken::Kind::Number, begin, i);
      continue;
    }
    if (c == '"') {
      ++i;
      bool closed = false;
      while (i < text.size() && text[i] != '\n') {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
          i += 2;
          continue;
        }
        if (text[i++] == '"') {
          closed = true;
          break;
        }
      }
      add(InputToken::Kind::String, begin, i);
      out.back().unterminated = !closed;
      continue;
    }
    size_t length = 1;
    for (std::string_view pair : kPairs) {
      if (text.substr(i, 2) == pair) length = 2;
    }
    i += length;
    add(InputToken::Kind::Operator, begin, i);
    // `uprobe:`, `uretprobe:` and `usdt:` (blanks allowed before the colon) start a path.
    size_t n = out.size();
    if (n >= 2 && out[n - 1].is(":") && (out[n - 2].is("uprobe") || out[n - 2].is("uretprobe") || out[n - 2].is("usdt"))) {
      path_next = true;
    }
  }
  return out;
}

std::string joinTokens(std::string_view text, const std::vector<InputToken>& tokens,
                       size_t first, size_t last) {
  std::string out;
  for (size_t i = first; i < last && i < tokens.size(); ++i) {
    if (i > first && tokens[i - 1].end != tokens[i].begin) out += ' ';
    out += text.substr(tokens[i].begin, tokens[i].end - tokens[i].begin);
  }
  return out;
}

}  // namespace kq::repl
