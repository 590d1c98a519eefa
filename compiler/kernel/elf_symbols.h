// Function symbols of an ELF binary or library, for uprobe targets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/diag/result.h"

namespace kq::kernel {

struct ElfSymbol {
  std::string name;
  uint64_t address;
  uint64_t size;
};

/// Function symbols from .symtab and .dynsym, sorted by name, duplicates removed.
Result<std::vector<ElfSymbol>> readFunctionSymbols(const std::string& path);

}  // namespace kq::kernel
