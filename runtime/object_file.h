// A kq object file (`kq build`): the BPF ELF object kq compiled, with the plan that runs it
// in a section of kq's own, `.kq.plan`. libbpf skips sections it does not know, so the
// object loads as it is; `kq run` reads the plan back instead of compiling anything.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kq::runtime {

inline constexpr const char* kPlanSection = ".kq.plan";

/// `elf` with one more section, `name`, holding `contents` (not loaded: no SHF_ALLOC). The
/// original bytes are kept as they are; the section, a new section name table and a new
/// section header table follow them. Nullopt (with `error`) when `elf` is not a 64-bit
/// little-endian ELF file.
std::optional<std::vector<char>> addSection(const std::vector<char>& elf, const std::string& name,
                                            const std::string& contents, std::string* error);

/// Where section `name`'s bytes lie in `elf`, or nullopt with `error` saying why.
struct SectionSpan {
  size_t offset;
  size_t size;
};
std::optional<SectionSpan> findSection(const std::vector<char>& elf, const std::string& name,
                                       std::string* error);

/// The contents of section `name`, or nullopt with `error` saying why ("not an ELF file",
/// "it has no section `.kq.plan`"). Every offset is checked against the file's size.
std::optional<std::string> sectionContents(const std::vector<char>& elf, const std::string& name,
                                           std::string* error);

}  // namespace kq::runtime
