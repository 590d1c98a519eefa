// Function symbols of an ELF binary or library, for uprobe targets (read by kernel/elf_file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/diag/result.h"
#include "host/elf_file.h"

namespace kq::host {

/// Function symbols from .symtab and .dynsym, sorted by name, duplicates removed.
Result<std::vector<ElfSymbol>> readFunctionSymbols(const std::string& path);

}  // namespace kq::host
