// Where a kprobe or uprobe finds a function's arguments and return value: registers in the
// architecture's `struct pt_regs`, then the stack. The calling conventions (System V for
// x86-64, AAPCS64 for arm64) fix which register holds which argument; the members' offsets
// are read through CO-RE from the kernel's BTF when it has `struct pt_regs`, so the table's
// offsets are only the fallback.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kq::lower {

enum class Arch : uint8_t { X86_64, Arm64 };

/// The architecture kq was built for, which is the one it traces.
Arch hostArch();

/// One register: a member of `struct pt_regs` (`di`, or element `element` of `regs`).
struct RegisterSlot {
  std::string_view member;
  bool is_array = false;
  uint32_t element = 0;
  uint32_t offset = 0;  // of the register in this architecture's `struct pt_regs`
};

struct PtRegsLayout {
  Arch arch;
  /// The registers that pass integer and pointer arguments, in order.
  std::vector<RegisterSlot> args;
  RegisterSlot ret;
  RegisterSlot sp;
  /// At function entry, where the first argument passed on the stack is, from `sp`
  /// (x86-64: past the return address the call pushed; arm64: at `sp`). Each takes 8 bytes.
  uint32_t first_stack_arg;
  /// A system call's six arguments as its entry saved them (x86-64 passes the fourth in
  /// r10; arm64 keeps the first in orig_x0, since x0 becomes the result).
  std::vector<RegisterSlot> syscall_args;
  /// The system call's number, still there at its exit.
  RegisterSlot syscall_nr;
};

const PtRegsLayout& ptRegsLayout(Arch arch);

/// A register by its `struct pt_regs` member's name (x86-64: `ax`, `r12`, `ip`), as USDT
/// notes name them (host/usdt.h); nothing for a name the architecture has not.
std::optional<RegisterSlot> ptRegsMember(Arch arch, std::string_view member);

}  // namespace kq::lower
