// User-space addresses to names: the process's mappings (/proc/PID/maps) lead to the
// mapped ELF file and its function symbols (`usym()`, `ustack`). Read on first need of a
// process and kept: a process that has exited by the time its event prints keeps its names
// if an earlier event of it was printed, else shows addresses.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel/elf_file.h"

namespace kq::runtime {

class UserSymbols {
 public:
  /// `main+0x1a`, or the address in hex when no symbol covers it.
  std::string name(uint32_t pid, uint64_t address);

 private:
  struct Mapping {
    uint64_t start, end, offset;
    std::string path;
  };
  /// A file's functions by address, and its segments.
  struct SymbolFile {
    std::vector<kernel::ElfSymbol> functions;
    std::vector<kernel::ElfSegment> segments;
  };
  const std::vector<Mapping>& mappings(uint32_t pid);
  const SymbolFile* file(const std::string& path);

  std::map<uint32_t, std::vector<Mapping>> processes_;
  std::map<std::string, std::unique_ptr<SymbolFile>> files_;
};

/// The process whose event is being printed (its `usym()` and `ustack` need it); 0: none.
void setCurrentProcess(uint32_t pid);
/// `address` in the current process, as UserSymbols::name says.
std::string userSymbol(uint64_t address);

}  // namespace kq::runtime
