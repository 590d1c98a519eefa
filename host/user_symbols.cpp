#include "host/user_symbols.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace kq::host {

UserSymbols::UserSymbols(size_t max_processes, size_t max_files, std::string proc)
    : max_processes_(std::max<size_t>(max_processes, 1)),
      max_files_(std::max<size_t>(max_files, 1)), proc_(std::move(proc)) {}

std::string UserSymbols::identity(uint32_t pid) const {
  // Fields 22 (start time: a new process under a reused PID), 26-28 (start and end of code,
  // start of stack: where exec put the program, different for every exec).
  std::ifstream in(fmt::format("{}/{}/stat", proc_, pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(text.substr(paren + 2));
  std::vector<std::string> f;
  for (std::string word; fields >> word && f.size() < 26;) f.push_back(word);
  if (f.size() < 26) return "";
  // After the `(comm)`, field 3 is f[0]: field n is f[n - 3].
  // A process that is exiting has let go of its memory, and the kernel shows its code and
  // stack as 0: it is gone, not a new program (its mappings are gone too).
  if (f[23] == "0" && f[24] == "0" && f[25] == "0") return "";
  return fmt::format("{} {} {} {}", f[19], f[23], f[24], f[25]);
}

const std::vector<UserSymbols::Mapping>* UserSymbols::mappings(uint32_t pid) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) {
    Process& p = it->second;
    process_use_.splice(process_use_.begin(), process_use_, p.used);
    if (p.checked_at_event == event_) return &p.mappings;
    p.checked_at_event = event_;
    std::string now = identity(pid);
    // Gone (exited): keep what was read while it lived. The same program: keep it.
    if (now.empty() || now == p.identity) return &p.mappings;
    process_use_.erase(p.used);
    processes_.erase(it);
  }
  Process p;
  p.identity = identity(pid);
  p.checked_at_event = event_;
  std::ifstream in(fmt::format("{}/{}/maps", proc_, pid));
  // `start-end perms offset dev inode path`, executable mappings of files only.
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    size_t dash = range.find('-'), colon = dev.find(':');
    if (dash == std::string::npos || colon == std::string::npos) continue;
    uint64_t device = (std::stoull(dev.substr(0, colon), nullptr, 16) << 20) |
                      std::stoull(dev.substr(colon + 1), nullptr, 16);
    p.mappings.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
                          std::stoull(range.substr(dash + 1), nullptr, 16),
                          std::stoull(offset, nullptr, 16), {device, std::stoull(inode)},
                          // The file as the process sees it (its mount namespace, even if deleted).
                          fmt::format("{}/{}/map_files/{}", proc_, pid, range)});
  }
  if (p.mappings.empty() && p.identity.empty()) return nullptr;  // never seen, and gone
  if (processes_.size() >= max_processes_) {
    processes_.erase(process_use_.back());
    process_use_.pop_back();
  }
  process_use_.push_front(pid);
  p.used = process_use_.begin();
  return &processes_.emplace(pid, std::move(p)).first->second.mappings;
}

const UserSymbols::SymbolFile* UserSymbols::file(const Mapping& mapping) {
  auto it = files_.find(mapping.file);
  if (it != files_.end()) {
    if (it->second) file_use_.splice(file_use_.begin(), file_use_, it->second->used);
    return it->second.get();
  }
  std::string error;
  std::unique_ptr<SymbolFile> symbols;
  if (std::optional<ElfFile> elf = readElfFile(mapping.path, error)) {
    symbols = std::make_unique<SymbolFile>();
    symbols->functions = std::move(elf->functions);
    symbols->segments = std::move(elf->segments);
    std::sort(symbols->functions.begin(), symbols->functions.end(),
              [](const ElfSymbol& a, const ElfSymbol& b) { return a.address < b.address; });
  } else {
    return nullptr;  // not kept: it may be readable the next time
  }
  if (files_.size() >= max_files_) {
    files_.erase(file_use_.back());
    file_use_.pop_back();
  }
  file_use_.push_front(mapping.file);
  symbols->used = file_use_.begin();
  return files_.emplace(mapping.file, std::move(symbols)).first->second.get();
}

std::string UserSymbols::name(uint32_t pid, uint64_t address) {
  std::string hex = fmt::format("0x{:x}", address);
  if (!pid) return hex;
  const std::vector<Mapping>* maps = mappings(pid);
  if (!maps) return hex;
  for (const Mapping& m : *maps) {
    if (address < m.start || address >= m.end) continue;
    const SymbolFile* f = file(m);
    if (!f) return hex;
    // The address in the process, then in the file, then in the file's own address space.
    uint64_t file_offset = address - m.start + m.offset;
    uint64_t vaddr = file_offset;
    for (const ElfSegment& s : f->segments) {
      if (file_offset >= s.offset && file_offset < s.offset + s.filesz) vaddr = file_offset - s.offset + s.vaddr;
    }
    auto after = std::upper_bound(f->functions.begin(), f->functions.end(), vaddr,
                                  [](uint64_t v, const ElfSymbol& s) { return v < s.address; });
    if (after == f->functions.begin()) return hex;
    const ElfSymbol& sym = *std::prev(after);
    if (vaddr >= sym.address + std::max<uint64_t>(sym.size, 1)) return hex;
    uint64_t off = vaddr - sym.address;
    return off ? fmt::format("{}+0x{:x}", sym.name, off) : sym.name;
  }
  return hex;
}

}  // namespace kq::host
