#include "tools/kq/input_tokens.h"

#include <cctype>

namespace kq::cli {
namespace {

bool isWordStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The operators of two characters; every other character is an operator of one.
constexpr std::string_view kPairs[] = {"->", "<=", ">=", "==", "!=", "<<", ">>", "&&", "||"};

}  // namespace

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
    // `uprobe:` and `uretprobe:` (blanks allowed before the colon) start a path.
    size_t n = out.size();
    if (n >= 2 && out[n - 1].is(":") && (out[n - 2].is("uprobe") || out[n - 2].is("uretprobe"))) {
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

}  // namespace kq::cli
