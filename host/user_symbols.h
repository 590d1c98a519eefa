// User-space addresses to names: the process's mappings (/proc/PID/maps) lead to the
// mapped ELF file and its function symbols (`usym()`, `ustack`).
//
// A process's mappings are read on first need and kept while the process stays the same
// program: its identity (start time, and where exec placed its code and stack, from
// /proc/PID/stat) is checked once per event, so an exec under the same PID, or a new
// process reusing it, reads them again. A process that has exited, or is exiting (its
// memory let go, so /proc shows no code), keeps the names read while it lived. Both
// caches are bounded (least recently used go first): files are kept by device and inode,
// so one libc is parsed once however many processes map it.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "host/elf_file.h"

namespace kq::host {

class UserSymbols {
 public:
  /// At most `max_processes` processes' mappings and `max_files` files' symbols are kept.
  explicit UserSymbols(size_t max_processes = 256, size_t max_files = 64,
                       std::string proc = "/proc");

  /// `main+0x1a`, or the address in hex when no symbol covers it.
  std::string name(uint32_t pid, uint64_t address);
  /// A new event is being printed: each process's identity is checked again on its next use.
  void nextEvent() { ++event_; }

  size_t processesKept() const { return processes_.size(); }
  size_t filesKept() const { return files_.size(); }

 private:
  struct Mapping {
    uint64_t start, end, offset;
    std::pair<uint64_t, uint64_t> file;  // device, inode
    std::string path;                    // the file as the process sees it
  };
  struct Process {
    std::string identity;
    uint64_t checked_at_event = 0;
    std::vector<Mapping> mappings;
    std::list<uint32_t>::iterator used;
  };
  /// A file's functions by address, and its segments (null: not an ELF file).
  struct SymbolFile {
    std::vector<ElfSymbol> functions;
    std::vector<ElfSegment> segments;
    std::list<std::pair<uint64_t, uint64_t>>::iterator used;
  };
  const std::vector<Mapping>* mappings(uint32_t pid);
  const SymbolFile* file(const Mapping& mapping);
  std::string identity(uint32_t pid) const;

  size_t max_processes_, max_files_;
  std::string proc_;
  uint64_t event_ = 1;
  std::map<uint32_t, Process> processes_;
  std::list<uint32_t> process_use_;  // most recent first
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<SymbolFile>> files_;
  std::list<std::pair<uint64_t, uint64_t>> file_use_;
};

}  // namespace kq::host
