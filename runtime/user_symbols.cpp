#include "runtime/user_symbols.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace kq::runtime {

const std::vector<UserSymbols::Mapping>& UserSymbols::mappings(uint32_t pid) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return it->second;
  std::vector<Mapping> maps;
  std::ifstream in(fmt::format("/proc/{}/maps", pid));
  // `start-end perms offset dev inode path`, executable mappings of files only.
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    maps.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
                    std::stoull(range.substr(dash + 1), nullptr, 16), std::stoull(offset, nullptr, 16),
                    // The file as the process sees it (its mount namespace, even if deleted).
                    fmt::format("/proc/{}/map_files/{}", pid, range)});
  }
  return processes_.emplace(pid, std::move(maps)).first->second;
}

const UserSymbols::SymbolFile* UserSymbols::file(const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return it->second.get();
  std::string error;
  std::unique_ptr<SymbolFile> symbols;
  if (std::optional<kernel::ElfFile> elf = kernel::readElfFile(path, error)) {
    symbols = std::make_unique<SymbolFile>();
    symbols->functions = std::move(elf->functions);
    symbols->segments = std::move(elf->segments);
    std::sort(symbols->functions.begin(), symbols->functions.end(),
              [](const kernel::ElfSymbol& a, const kernel::ElfSymbol& b) { return a.address < b.address; });
  }
  return files_.emplace(path, std::move(symbols)).first->second.get();
}

std::string UserSymbols::name(uint32_t pid, uint64_t address) {
  std::string hex = fmt::format("0x{:x}", address);
  if (!pid) return hex;
  for (const Mapping& m : mappings(pid)) {
    if (address < m.start || address >= m.end) continue;
    const SymbolFile* f = file(m.path);
    if (!f) return hex;
    // The address in the process, then in the file, then in the file's own address space.
    uint64_t file_offset = address - m.start + m.offset;
    uint64_t vaddr = file_offset;
    for (const kernel::ElfSegment& s : f->segments) {
      if (file_offset >= s.offset && file_offset < s.offset + s.filesz) vaddr = file_offset - s.offset + s.vaddr;
    }
    auto after = std::upper_bound(f->functions.begin(), f->functions.end(), vaddr,
                                  [](uint64_t v, const kernel::ElfSymbol& s) { return v < s.address; });
    if (after == f->functions.begin()) return hex;
    const kernel::ElfSymbol& sym = *std::prev(after);
    if (vaddr >= sym.address + std::max<uint64_t>(sym.size, 1)) return hex;
    uint64_t off = vaddr - sym.address;
    return off ? fmt::format("{}+0x{:x}", sym.name, off) : sym.name;
  }
  return hex;
}

namespace {
uint32_t g_current_pid = 0;
UserSymbols& userSymbols() {
  static UserSymbols symbols;
  return symbols;
}
}  // namespace

void setCurrentProcess(uint32_t pid) { g_current_pid = pid; }

std::string userSymbol(uint64_t address) { return userSymbols().name(g_current_pid, address); }

}  // namespace kq::runtime
