#include "host/kernel_symbols.h"

#include "host/kallsyms.h"

#include <algorithm>

#include <fmt/format.h>

namespace kq::host {
std::string KernelSymbols::name(uint64_t address) {
  if (!loaded_) {
    loaded_ = true;
    symbols_.clear();
    source_([&](uint64_t at, std::string_view symbol) {
      if (at != 0) symbols_.push_back({at, std::string(symbol)});
    });
    std::sort(symbols_.begin(), symbols_.end(),
              [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  }
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return fmt::format("0x{:x}", address);
  --it;
  uint64_t offset = address - it->address;
  if (offset > (1u << 20)) return fmt::format("0x{:x}", address);
  return offset ? fmt::format("{}+0x{:x}", it->name, offset) : it->name;
}

SymbolSource kallsymsSource() { return forEachKernelTextSymbol; }

}  // namespace kq::host
