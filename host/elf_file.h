// What kq reads of an ELF binary or library, for both phases: its function symbols (uprobe
// targets; names for user-space addresses) and its loadable segments (to turn an address
// in a process into one in the file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kq::host {

struct ElfSymbol {
  std::string name;
  uint64_t address;
  uint64_t size;
};

/// A PT_LOAD segment: file bytes from `offset` are mapped at `vaddr`.
struct ElfSegment {
  uint64_t offset;
  uint64_t vaddr;
  uint64_t filesz;
};

struct ElfFile {
  std::vector<ElfSymbol> functions;  // from .symtab and .dynsym, in file order
  std::vector<ElfSegment> segments;
};

/// Reads `path`; nothing (with `error` saying why) if it cannot be opened or is not ELF.
std::optional<ElfFile> readElfFile(const std::string& path, std::string& error);

}  // namespace kq::host
