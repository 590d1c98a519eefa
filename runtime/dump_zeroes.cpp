#include "runtime/dump_zeroes.h"

#include <memory>
#include <vector>

namespace kq::runtime {
namespace {

/// A line of the dump and, for one that opens a block (`{` or `[`), the lines inside it
/// and the one that closes it.
struct Line {
  std::string text;
  std::vector<std::unique_ptr<Line>> children;
  std::string close;  // empty for a leaf
};

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool opens(const std::string& t) { return !t.empty() && (t.back() == '{' || t.back() == '['); }
bool closes(const std::string& t) { return !t.empty() && (t[0] == '}' || t[0] == ']'); }

/// Whether a leaf's value is zero: `.x = (int)0,`, `(struct s *)0x0`, `(nil)`, `false`, or an
/// array element `0,`.
bool zeroLeaf(const std::string& text) {
  std::string t = trimmed(text);
  if (!t.empty() && t.back() == ',') t.pop_back();
  size_t eq = t.find(" = ");
  std::string value = eq == std::string::npos ? t : t.substr(eq + 3);
  if (!value.empty() && value[0] == '(') {
    // A cast, then the value: skip the cast's balanced parentheses.
    int depth = 0;
    size_t i = 0;
    for (; i < value.size(); ++i) {
      if (value[i] == '(') ++depth;
      if (value[i] == ')' && --depth == 0) break;
    }
    value = i + 1 < value.size() ? value.substr(i + 1) : "";
  }
  return value == "0" || value == "0x0" || value == "(nil)" || value == "false" || value == "'\\0'";
}

/// libbpf 1.1 prints a zero bitfield as its cast alone, with no value and no line break:
/// `.sk_shutdown = (u8)    .sk_lingertime = ...`. The bitfield is zero: keep what follows.
std::string withoutEmptyBitfield(const std::string& line) {
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string::npos || line.compare(indent, 1, ".") != 0) return line;
  size_t eq = line.find(" = (", indent);
  if (eq == std::string::npos) return line;
  size_t cast_end = line.find(')', eq);
  if (cast_end == std::string::npos || cast_end + 1 >= line.size() || line[cast_end + 1] != ' ') return line;
  size_t next = line.find_first_not_of(' ', cast_end + 1);
  if (next == std::string::npos || line[next] != '.') return line;
  return withoutEmptyBitfield(line.substr(0, indent) + line.substr(next));
}

/// Reads lines from `at` until the block closes; returns the closing line's index.
size_t parse(const std::vector<std::string>& lines, size_t at, Line& into) {
  while (at < lines.size()) {
    const std::string t = trimmed(lines[at]);
    if (closes(t) && !opens(t)) {
      into.close = lines[at];
      return at + 1;
    }
    auto line = std::make_unique<Line>();
    line->text = lines[at];
    ++at;
    if (opens(t)) at = parse(lines, at, *line);
    into.children.push_back(std::move(line));
  }
  return at;
}

/// Drops zero members and blocks with nothing left; an array keeps its zeroes (their
/// places matter) unless every element is zero. Returns whether `line` stays.
bool prune(Line& line) {
  if (line.close.empty() && line.children.empty()) return !zeroLeaf(line.text);
  bool array = trimmed(line.text).back() == '[';
  if (array) {
    for (const auto& child : line.children) {
      if (!child->children.empty() || !zeroLeaf(child->text)) return true;
    }
    return false;
  }
  std::vector<std::unique_ptr<Line>> kept;
  for (auto& child : line.children) {
    if (prune(*child)) kept.push_back(std::move(child));
  }
  line.children = std::move(kept);
  return !line.children.empty();
}

void print(const Line& line, std::string& out) {
  out += line.text + "\n";
  for (const auto& child : line.children) print(*child, out);
  if (!line.close.empty()) out += line.close + "\n";
}

}  // namespace

std::string withoutZeroes(const std::string& dump) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < dump.size()) {
    size_t nl = dump.find('\n', start);
    lines.push_back(withoutEmptyBitfield(
        dump.substr(start, nl == std::string::npos ? std::string::npos : nl - start)));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  Line root;
  parse(lines, 0, root);
  std::string out;
  for (auto& top : root.children) {
    // The dumped struct itself stays, even when all of it is zero.
    if (!top->close.empty() || !top->children.empty()) {
      std::vector<std::unique_ptr<Line>> kept;
      for (auto& child : top->children) {
        if (prune(*child)) kept.push_back(std::move(child));
      }
      top->children = std::move(kept);
    }
    print(*top, out);
  }
  if (!out.empty() && (dump.empty() || dump.back() != '\n')) out.pop_back();
  return out;
}

}  // namespace kq::runtime
