// Kernel addresses to names, from /proc/kallsyms (read on first use after each refresh,
// so a long-running kq sees modules loaded since its last session).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kq::host {

/// Calls `visit(address, name)` for each text symbol; false when they cannot be read.
using SymbolSource =
    std::function<bool(const std::function<void(uint64_t, std::string_view)>& visit)>;

/// Text symbols by address, read from `source` when first asked after a refresh.
class KernelSymbols {
 public:
  explicit KernelSymbols(SymbolSource source) : source_(std::move(source)) {}
  /// `ip_send_skb+0x1a`, or the address in hex when no symbol covers it.
  std::string name(uint64_t address);
  /// Forgets the symbols; the next name() reads them again.
  void refresh() { loaded_ = false; }

 private:
  struct Symbol {
    uint64_t address;
    std::string name;
  };
  SymbolSource source_;
  bool loaded_ = false;
  std::vector<Symbol> symbols_;  // by address
};

/// The running kernel's symbols, from /proc/kallsyms.
SymbolSource kallsymsSource();

}  // namespace kq::host
