// USDT probes (DTRACE_PROBE, STAP_PROBE of <sys/sdt.h>) as an ELF binary or library
// declares them in its `.note.stapsdt` notes: where each site is, the semaphore that turns
// it on, and where each argument is at the site, in the assembler's words (`-4@%eax`,
// `8@-16(%rbp)`, `-8@counter(%rip)`, `-4@$5`), parsed here for x86-64.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diag/result.h"

namespace kq::host {

/// One argument of a site: `size` bytes, signed or not, in a register, at an address made
/// of registers and a displacement, or a constant.
struct UsdtArg {
  enum class Kind : uint8_t { Constant, Register, Memory };
  uint32_t size = 8;
  bool is_signed = false;
  Kind kind = Kind::Constant;
  /// Register: the register, by its `struct pt_regs` member (`ax` for %rax, %eax, %ax and
  /// %al); Memory: the base register (`ip` for %rip-relative), or empty for none.
  std::string reg;
  bool high_byte = false;  // %ah, %bh, %ch, %dh: bits 8..15 of the register
  /// Memory: the index register and its scale (`(%rax,%rdi,4)`), or empty.
  std::string index;
  uint32_t scale = 1;
  /// Constant: the value. Memory: the displacement; for %rip-relative, the symbol's
  /// address in the file plus the displacement (the site's own address tells where the
  /// file is loaded).
  int64_t value = 0;
  std::string text;  // as the note has it
};

struct UsdtSite {
  uint64_t address = 0;           // in the file's address space (prelink undone)
  uint64_t file_offset = 0;       // where a uprobe attaches
  uint64_t semaphore_offset = 0;  // the semaphore's file offset (a uprobe's ref_ctr_offset), 0 for none
  std::vector<UsdtArg> args;
  std::string args_text;
  /// Why its arguments cannot be read (an operand kq does not know), empty when they can.
  std::string problem;
};

struct UsdtProbe {
  std::string provider;
  std::string name;
  std::vector<UsdtSite> sites;  // one per place the probe was written or inlined
};

/// Every probe of `path`, sorted by provider and name (none when it has no notes).
Result<std::vector<UsdtProbe>> readUsdtProbes(const std::string& path);

/// A site's argument string (`-4@%eax 8@-16(%rbp)`); `symbol` gives the address of a
/// symbol a %rip-relative operand names.
using SymbolAddress = std::function<std::optional<uint64_t>(std::string_view)>;
Result<std::vector<UsdtArg>> parseUsdtArgs(std::string_view text, const SymbolAddress& symbol = {});

}  // namespace kq::host
