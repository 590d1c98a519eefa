#include "compiler/diag/render.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/diag/utf8.h"

namespace kq {
namespace {

constexpr std::string_view kBold = "\033[1m";
constexpr std::string_view kRed = "\033[1;31m";
constexpr std::string_view kMagenta = "\033[1;35m";
constexpr std::string_view kCyan = "\033[1;36m";
constexpr std::string_view kGreen = "\033[1;32m";
constexpr std::string_view kReset = "\033[0m";

/// One character of a source line as it is shown: printable text, or a replacement that
/// shows what it is (`\xff` for a byte that is not UTF-8, U+FFFD for a control character),
/// so the caret line stays aligned and the line is never echoed with the bad bytes.
struct Cell {
  uint32_t offset;  // byte offset of the character in the line
  std::string shown;
  uint32_t columns = 1;
};

std::vector<Cell> cellsOf(std::string_view line) {
  std::vector<Cell> cells;
  for (uint32_t i = 0; i < line.size();) {
    auto lead = static_cast<unsigned char>(line[i]);
    size_t len = validUtf8Length(line, i);
    if (len == 0) {
      cells.push_back({i, fmt::format("\\x{:02x}", lead), 4});
      ++i;
      continue;
    }
    if (lead == '\t') {
      cells.push_back({i, " "});
    } else if (lead < 0x20 || lead == 0x7F) {
      cells.push_back({i, "\xEF\xBF\xBD"});  // U+FFFD
    } else {
      cells.push_back({i, std::string(line.substr(i, len))});
    }
    i += len;
  }
  return cells;
}

std::string_view severityWord(Severity severity) {
  switch (severity) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

std::string_view severityColor(Severity severity) {
  switch (severity) {
    case Severity::Error: return kRed;
    case Severity::Warning: return kMagenta;
    case Severity::Note: return kCyan;
  }
  return kRed;
}

class Printer {
 public:
  Printer(const SourceManager& sources, std::ostream& out, const RenderOptions& options)
      : sources_(sources), out_(out), options_(options) {}

  void header(std::optional<SourceRange> range, Severity severity, std::string_view message,
              std::string_view kind) {
    if (range) {
      const SourceFile& file = sources_.file(range->file);
      LineColumn at = file.lineColumn(range->begin);
      paint(kBold, fmt::format("{}:{}:{}: ", file.name(), at.line, at.column));
    }
    paint(severityColor(severity), fmt::format("{}: ", severityWord(severity)));
    paint(kBold, message);
    if (!kind.empty()) out_ << " [" << kind << "]";
    out_ << "\n";
    if (range) snippet(*range);
  }

 private:
  void paint(std::string_view color, std::string_view text) {
    if (options_.color) out_ << color;
    out_ << text;
    if (options_.color) out_ << kReset;
  }

  // The source line and a caret under `range`, underlined up to the end of its first line.
  void snippet(SourceRange range) {
    const SourceFile& file = sources_.file(range.file);
    LineColumn at = file.lineColumn(range.begin);
    uint32_t line_start = file.lineStart(at.line);
    std::string_view line = file.lineText(at.line);
    std::vector<Cell> cells = cellsOf(line);

    uint32_t begin_byte = range.begin - line_start;
    uint32_t end_byte = std::min<uint32_t>(std::max(range.end, range.begin + 1) - line_start,
                                           static_cast<uint32_t>(line.size()) + 1);
    auto cellAt = [&](uint32_t byte) {
      return static_cast<size_t>(
          std::lower_bound(cells.begin(), cells.end(), byte,
                           [](const Cell& c, uint32_t b) { return c.offset < b; }) -
          cells.begin());
    };
    size_t caret = cellAt(begin_byte);
    size_t caret_end = std::max(cellAt(end_byte), caret + 1);

    // A long line is shown as a window around the caret, marked with `...` at cut ends.
    size_t width = options_.max_line_width;
    size_t first = 0;
    size_t last = cells.size();
    if (cells.size() > width) {
      first = caret > width / 2 ? caret - width / 2 : 0;
      last = std::min(cells.size(), first + width);
    }
    caret_end = std::min(caret_end, std::max(last, caret + 1));

    std::string shown = first > 0 ? "..." : "";
    std::string marks(shown.size(), ' ');
    for (size_t i = first; i < last; ++i) shown += cells[i].shown;
    if (last < cells.size()) shown += "...";
    for (size_t i = first; i < caret; ++i) marks += std::string(cells[i].columns, ' ');
    // An escaped byte under the caret is underlined whole.
    std::string underline = "^";
    auto columns = [&](size_t i) { return i < cells.size() ? cells[i].columns : 1u; };
    underline += std::string(columns(caret) - 1, '~');
    for (size_t i = caret + 1; i < caret_end; ++i) underline += std::string(columns(i), '~');
    out_ << shown << "\n" << marks;
    paint(kGreen, underline);
    out_ << "\n";
  }

  const SourceManager& sources_;
  std::ostream& out_;
  const RenderOptions& options_;
};

}  // namespace

void renderDiagnostic(const Diagnostic& diag, const SourceManager& sources, std::ostream& out,
                      const RenderOptions& options) {
  Printer printer(sources, out, options);
  printer.header(diag.range, diag.severity, diag.message, diagKindName(diag.kind));
  for (const DiagNote& note : diag.notes) {
    printer.header(note.range, Severity::Note, note.message, "");
  }
}

void renderDiagnostics(const Diagnostics& diags, const SourceManager& sources, std::ostream& out,
                       const RenderOptions& options) {
  // In source order, whichever pass found them.
  std::vector<const Diagnostic*> sorted;
  for (const Diagnostic& diag : diags.all()) sorted.push_back(&diag);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic* a, const Diagnostic* b) {
    return std::pair(a->range.file, a->range.begin) < std::pair(b->range.file, b->range.begin);
  });
  for (const Diagnostic* diag : sorted) renderDiagnostic(*diag, sources, out, options);
  if (diags.errorCount() > 1) out << diags.errorCount() << " errors\n";
}

}  // namespace kq
