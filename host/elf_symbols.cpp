#include "host/elf_symbols.h"

#include <algorithm>

namespace kq::host {

Result<std::vector<ElfSymbol>> readFunctionSymbols(const std::string& path) {
  std::string error;
  std::optional<ElfFile> file = readElfFile(path, error);
  if (!file) return Error{error};
  std::vector<ElfSymbol> out = std::move(file->functions);
  std::sort(out.begin(), out.end(),
            [](const ElfSymbol& a, const ElfSymbol& b) { return a.name < b.name; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const ElfSymbol& a, const ElfSymbol& b) { return a.name == b.name; }),
            out.end());
  return out;
}

}  // namespace kq::host
