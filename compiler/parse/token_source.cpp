#include "compiler/parse/token_source.h"

#include <algorithm>

namespace kq::parse {

TokenSource::TokenSource(const SourceFile& file, FileId id) : source_(file), file_(id) {
  const std::string& text = file.text();
  byte_of_code_point_.reserve(text.size() + 1);
  for (uint32_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) byte_of_code_point_.push_back(i);
  }
  byte_of_code_point_.push_back(static_cast<uint32_t>(text.size()));
}

uint32_t TokenSource::byteOffset(size_t code_point) const {
  return byte_of_code_point_[std::min(code_point, byte_of_code_point_.size() - 1)];
}

SourceRange TokenSource::range(const antlr4::Token* token) const {
  return range(token, token);
}

SourceRange TokenSource::range(const antlr4::Token* first, const antlr4::Token* last) const {
  uint32_t begin = byteOffset(first->getStartIndex());
  if (last->getType() == antlr4::Token::EOF) return {file_, begin, begin};
  uint32_t end = byteOffset(last->getStopIndex() + 1);
  return {file_, begin, std::max(begin, end)};
}

std::string_view TokenSource::text(const antlr4::Token* token) const {
  SourceRange r = range(token);
  return std::string_view(source_.text()).substr(r.begin, r.end - r.begin);
}

std::string TokenSource::display(const antlr4::Token* token) const {
  if (token->getType() == antlr4::Token::EOF) return "the end of the input";
  std::string_view shown = text(token);
  if (shown.size() > 24) return "`" + std::string(shown.substr(0, 20)) + "...`";
  return "`" + std::string(shown) + "`";
}

}  // namespace kq::parse
