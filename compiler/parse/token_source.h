// Maps ANTLR tokens back to kq source ranges. ANTLR counts code points; kq's ranges are
// byte offsets, so the mapping is built once per file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "Token.h"
#include "compiler/diag/source.h"

namespace kq::parse {

class TokenSource {
 public:
  TokenSource(const SourceFile& file, FileId id);

  SourceRange range(const antlr4::Token* token) const;
  /// From the start of `first` to the end of `last`.
  SourceRange range(const antlr4::Token* first, const antlr4::Token* last) const;
  /// The token's text as written (empty for end of input).
  std::string_view text(const antlr4::Token* token) const;
  /// How a token is named in a message: `foo`, or `the end of the input`.
  std::string display(const antlr4::Token* token) const;

  FileId file() const { return file_; }
  const SourceFile& source() const { return source_; }

 private:
  uint32_t byteOffset(size_t code_point) const;

  const SourceFile& source_;
  FileId file_;
  std::vector<uint32_t> byte_of_code_point_;
};

}  // namespace kq::parse
