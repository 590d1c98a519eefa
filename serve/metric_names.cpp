#include "serve/metric_names.h"

#include <cstring>

namespace kq::serve {
namespace {

bool nameByte(char c, bool first) {
  bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return letter || (!first && c >= '0' && c <= '9');
}

}  // namespace

bool isLabelName(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!nameByte(name[i], i == 0)) return false;
  }
  return true;
}

std::optional<std::string> columnName(const std::string& column) {
  if (column == "count()") return "count";
  if (isLabelName(column)) return column;
  return std::nullopt;
}

std::string legalSpelling(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool legal = nameByte(c, out.empty());
    if (legal) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  while (out.rfind("__", 0) == 0) out.erase(0, 1);
  return out.empty() ? "value" : out;
}

std::string scriptName(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".kq", ".o"}) {
    size_t n = std::strlen(ext);
    if (name.size() > n && name.compare(name.size() - n, n, ext) == 0) name.resize(name.size() - n);
  }
  std::string out;
  for (char c : name) out += nameByte(c, false) ? c : '_';
  return out.empty() ? "script" : out;
}

}  // namespace kq::serve
