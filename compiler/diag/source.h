// Source text and positions. Every diagnostic and AST node points into a SourceFile
// through a SourceRange of byte offsets; line and column are computed only for display.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace kq {

using FileId = uint32_t;

/// A half-open byte range [begin, end) in one source file.
struct SourceRange {
  FileId file = 0;
  uint32_t begin = 0;
  uint32_t end = 0;

  /// The smallest range covering both (they must be in the same file).
  SourceRange to(SourceRange last) const { return {file, begin, last.end}; }
  bool empty() const { return begin == end; }
};

/// A line and column, both 1-based. Columns count characters (UTF-8 code points), not bytes.
struct LineColumn {
  uint32_t line = 1;
  uint32_t column = 1;
};

/// One script, module or command-line query, with a line table built on construction.
class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  LineColumn lineColumn(uint32_t offset) const;
  /// The byte offset of a line and column (the inverse of lineColumn); 0 for line 0, a
  /// column past its line's end stops at the end.
  uint32_t offsetOf(LineColumn at) const;
  /// The text of the 1-based line `line`, without its line terminator.
  std::string_view lineText(uint32_t line) const;
  /// Byte offset where the 1-based line `line` starts.
  uint32_t lineStart(uint32_t line) const { return line_starts_[line - 1]; }

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

/// Owns the source files of one compilation; FileIds index into it and stay valid.
class SourceManager {
 public:
  FileId add(std::string name, std::string text);
  const SourceFile& file(FileId id) const { return files_[id]; }

 private:
  std::deque<SourceFile> files_;
};

}  // namespace kq
