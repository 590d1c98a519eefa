#include "compiler/lower/pt_regs.h"
#include <iterator>

namespace kq::lower {

Arch hostArch() {
#if defined(__aarch64__)
  return Arch::Arm64;
#else
  return Arch::X86_64;
#endif
}

namespace {

// arch/x86/include/asm/ptrace.h (64-bit): r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di
// orig_ax ip cs flags sp ss, 8 bytes each.
PtRegsLayout x86_64() {
  return {Arch::X86_64,
          {{"di", false, 0, 112}, {"si", false, 0, 104}, {"dx", false, 0, 96},
           {"cx", false, 0, 88}, {"r8", false, 0, 72}, {"r9", false, 0, 64}},
          {"ax", false, 0, 80},
          {"sp", false, 0, 152},
          8,
          {{"di", false, 0, 112}, {"si", false, 0, 104}, {"dx", false, 0, 96},
           {"r10", false, 0, 56}, {"r8", false, 0, 72}, {"r9", false, 0, 64}},
          {"orig_ax", false, 0, 120}};
}

// arch/arm64/include/asm/ptrace.h: u64 regs[31], sp, pc, pstate (through user_pt_regs).
// Then orig_x0 and syscallno (struct pt_regs past user_pt_regs).
PtRegsLayout arm64() {
  PtRegsLayout out{Arch::Arm64, {}, {"regs", true, 0, 0}, {"sp", false, 0, 248}, 0, {},
                   {"syscallno", false, 0, 280}};
  for (uint32_t i = 0; i < 8; ++i) out.args.push_back({"regs", true, i, 8 * i});
  out.syscall_args.push_back({"orig_x0", false, 0, 272});
  for (uint32_t i = 1; i < 6; ++i) out.syscall_args.push_back({"regs", true, i, 8 * i});
  return out;
}

}  // namespace

const PtRegsLayout& ptRegsLayout(Arch arch) {
  static const PtRegsLayout x86 = x86_64();
  static const PtRegsLayout a64 = arm64();
  return arch == Arch::Arm64 ? a64 : x86;
}

std::optional<RegisterSlot> ptRegsMember(Arch arch, std::string_view member) {
  if (arch != Arch::X86_64) return std::nullopt;
  // arch/x86/include/asm/ptrace.h, in order, 8 bytes each.
  static constexpr std::string_view kMembers[] = {"r15", "r14", "r13", "r12", "bp", "bx", "r11",
                                                  "r10", "r9", "r8", "ax", "cx", "dx", "si",
                                                  "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"};
  for (uint32_t i = 0; i < std::size(kMembers); ++i) {
    if (kMembers[i] == member) return RegisterSlot{kMembers[i], false, 0, 8 * i};
  }
  return std::nullopt;
}

}  // namespace kq::lower
