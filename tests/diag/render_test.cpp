#include "compiler/diag/render.h"

#include <sstream>

#include <gtest/gtest.h>

namespace kq {
namespace {

std::string render(const std::string& text, uint32_t begin, uint32_t end,
                   RenderOptions options = {}) {
  SourceManager sources;
  FileId file = sources.add("q.kq", text);
  Diagnostics diags;
  diags.report(DiagKind::UnexpectedToken, {file, begin, end}, "unexpected `x`")
      .note("a hint");
  std::ostringstream out;
  renderDiagnostics(diags, sources, out, options);
  return out.str();
}

TEST(Render, CaretAndUnderline) {
  EXPECT_EQ(render("trace foo bar\n", 10, 13),
            "q.kq:1:11: error: unexpected `x` [UnexpectedToken]\n"
            "trace foo bar\n"
            "          ^~~\n"
            "note: a hint\n");
}

TEST(Render, SecondLineAndEndOfInput) {
  EXPECT_EQ(render("let a = 1\ntrace x where", 23, 23),
            "q.kq:2:14: error: unexpected `x` [UnexpectedToken]\n"
            "trace x where\n"
            "             ^\n"
            "note: a hint\n");
}

TEST(Render, ColumnsCountCharactersNotBytes) {
  // "é" is two bytes; the caret under `x` must still line up.
  EXPECT_EQ(render("\"é\" x", 5, 6),
            "q.kq:1:5: error: unexpected `x` [UnexpectedToken]\n"
            "\"é\" x\n"
            "    ^\n"
            "note: a hint\n");
}

TEST(Render, ControlCharactersAreReplaced) {
  std::string text("a\0b\tc", 5);
  EXPECT_EQ(render(text, 4, 5),
            "q.kq:1:5: error: unexpected `x` [UnexpectedToken]\n"
            "a\xEF\xBF\xBD" "b c\n"
            "    ^\n"
            "note: a hint\n");
}

TEST(Render, LongLinesShowAWindowAroundTheCaret) {
  std::string text(1000, 'a');
  std::string out = render(text, 500, 501, RenderOptions{false, 40});
  std::istringstream lines(out);
  std::string header, line, caret;
  std::getline(lines, header);
  std::getline(lines, line);
  std::getline(lines, caret);
  EXPECT_EQ(header, "q.kq:1:501: error: unexpected `x` [UnexpectedToken]");
  EXPECT_EQ(line, "..." + std::string(40, 'a') + "...");
  EXPECT_EQ(caret, std::string(3 + 20, ' ') + "^");
}

TEST(Render, Color) {
  std::string out = render("x", 0, 1, RenderOptions{true, 120});
  EXPECT_NE(out.find("\033[1;31merror: "), std::string::npos);
}

}  // namespace
}  // namespace kq

namespace kq {
namespace {

TEST(SourceFile, OffsetOfIsTheInverseOfLineColumn) {
  SourceFile file("x", "let a = 1\ntrace é(x) where y\n");
  for (uint32_t offset : {0u, 4u, 10u, 16u, 19u, 24u}) {
    EXPECT_EQ(file.offsetOf(file.lineColumn(offset)), offset) << offset;
  }
  EXPECT_EQ(file.offsetOf({0, 1}), 0u);
  EXPECT_EQ(file.offsetOf({1, 99}), 9u);  // stops at the line's end
}

}  // namespace
}  // namespace kq
