#include "host/kallsyms.h"

#include <charconv>
#include <fstream>
#include <string>

namespace kq::host {

namespace {

/// Calls `visit(address, kind, name)` for each well-formed line of `in`.
void forEachLine(std::istream& in,
                 const std::function<void(uint64_t, char, std::string_view)>& visit) {
  std::string line;
  while (std::getline(in, line)) {
    std::string_view rest = line;
    size_t space = rest.find(' ');
    // "<address> <kind> <name>[\t[module]]"
    if (space == std::string_view::npos || rest.size() < space + 4 || rest[space + 2] != ' ') {
      continue;
    }
    char kind = rest[space + 1];
    uint64_t address = 0;
    auto [end_of_address, error] = std::from_chars(rest.data(), rest.data() + space, address, 16);
    if (error != std::errc() || end_of_address != rest.data() + space) continue;
    std::string_view name = rest.substr(space + 3);
    name = name.substr(0, name.find_first_of("\t "));
    if (!name.empty()) visit(address, kind, name);
  }
}

}  // namespace

void forEachTextSymbol(std::istream& in,
                       const std::function<void(uint64_t address, std::string_view name)>& visit) {
  forEachLine(in, [&](uint64_t address, char kind, std::string_view name) {
    if (kind == 'T' || kind == 't') visit(address, name);
  });
}

void forEachSymbol(std::istream& in,
                   const std::function<void(uint64_t address, std::string_view name)>& visit) {
  forEachLine(in, [&](uint64_t address, char, std::string_view name) { visit(address, name); });
}

bool forEachKernelTextSymbol(
    const std::function<void(uint64_t address, std::string_view name)>& visit) {
  std::ifstream in("/proc/kallsyms");
  if (!in) return false;
  forEachTextSymbol(in, visit);
  return true;
}

bool forEachKernelSymbol(const std::function<void(uint64_t address, std::string_view name)>& visit) {
  std::ifstream in("/proc/kallsyms");
  if (!in) return false;
  forEachSymbol(in, visit);
  return true;
}

}  // namespace kq::host
