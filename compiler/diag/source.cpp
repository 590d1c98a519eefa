#include "compiler/diag/source.h"

#include <algorithm>

namespace kq {

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

LineColumn SourceFile::lineColumn(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, text_.size());
  auto next = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(next - line_starts_.begin());
  uint32_t column = 1;
  for (uint32_t i = line_starts_[line - 1]; i < offset; ++i) {
    // Count every byte except UTF-8 continuation bytes, so a column is a character.
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
  }
  return {line, column};
}

uint32_t SourceFile::offsetOf(LineColumn at) const {
  if (at.line == 0 || at.line > line_starts_.size()) return 0;
  uint32_t offset = line_starts_[at.line - 1];
  for (uint32_t column = 1; column < at.column && offset < text_.size() && text_[offset] != '\n';) {
    ++offset;
    if (offset >= text_.size() || (static_cast<unsigned char>(text_[offset]) & 0xC0) != 0x80) ++column;
  }
  return offset;
}

std::string_view SourceFile::lineText(uint32_t line) const {
  uint32_t begin = line_starts_[line - 1];
  uint32_t end = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(begin, end - begin);
}

FileId SourceManager::add(std::string name, std::string text) {
  files_.emplace_back(std::move(name), std::move(text));
  return static_cast<FileId>(files_.size() - 1);
}

}  // namespace kq
