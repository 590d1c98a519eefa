// Reading a compiled object back: its BPF instructions with the kq source each came from
// (`--dump bpf`), and the source of one instruction (to point a verifier rejection at the
// kq expression that produced it). Uses the object's DWARF line table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/diag/result.h"
#include "compiler/diag/source.h"

namespace kq::lower {

/// Every program's instructions, annotated with `; line:col  source` where the source changes.
Result<std::string> disassemble(const std::vector<char>& elf, const SourceFile& source);

/// The kq line and column of instruction `index` (counted in 8-byte slots) of `program`.
std::optional<LineColumn> sourceOfInstruction(const std::vector<char>& elf,
                                              const std::string& program, int index);

}  // namespace kq::lower
