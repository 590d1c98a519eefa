#include "runtime/object_file.h"

#include <elf.h>

#include <cstring>

namespace kq::runtime {
namespace {

/// The ELF header of `elf` when it is a 64-bit little-endian ELF file whose section headers
/// and section name table lie inside it.
std::optional<Elf64_Ehdr> elfHeader(const std::vector<char>& elf, std::string* error) {
  Elf64_Ehdr header;
  if (elf.size() < sizeof header || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0) {
    *error = "it is not an ELF file";
    return std::nullopt;
  }
  std::memcpy(&header, elf.data(), sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_shentsize != sizeof(Elf64_Shdr) || header.e_machine != EM_BPF) {
    *error = "it is not a 64-bit little-endian BPF object";
    return std::nullopt;
  }
  uint64_t table_end = header.e_shoff + uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (header.e_shoff > elf.size() || table_end > elf.size() || header.e_shstrndx >= header.e_shnum) {
    *error = "its section headers lie outside the file";
    return std::nullopt;
  }
  return header;
}

Elf64_Shdr sectionHeader(const std::vector<char>& elf, const Elf64_Ehdr& header, size_t i) {
  Elf64_Shdr section;
  std::memcpy(&section, elf.data() + header.e_shoff + i * sizeof section, sizeof section);
  return section;
}

bool inside(const std::vector<char>& elf, const Elf64_Shdr& section) {
  return section.sh_type == SHT_NOBITS ||
         (section.sh_offset <= elf.size() && section.sh_size <= elf.size() - section.sh_offset);
}

void append(std::vector<char>& out, const void* bytes, size_t size) {
  const char* p = static_cast<const char*>(bytes);
  out.insert(out.end(), p, p + size);
}

void alignTo(std::vector<char>& out, size_t alignment) {
  out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
}

}  // namespace

std::optional<std::vector<char>> addSection(const std::vector<char>& elf, const std::string& name,
                                            const std::string& contents, std::string* error) {
  std::optional<Elf64_Ehdr> header = elfHeader(elf, error);
  if (!header) return std::nullopt;
  Elf64_Shdr names = sectionHeader(elf, *header, header->e_shstrndx);
  if (names.sh_type != SHT_STRTAB || !inside(elf, names)) {
    *error = "its section name table is broken";
    return std::nullopt;
  }
  std::vector<char> out = elf;
  alignTo(out, 8);
  Elf64_Shdr added{};
  added.sh_type = SHT_PROGBITS;
  added.sh_offset = out.size();
  added.sh_size = contents.size();
  added.sh_addralign = 1;
  append(out, contents.data(), contents.size());

  // A new name table: the old one, then the new name.
  Elf64_Shdr new_names = names;
  new_names.sh_offset = out.size();
  append(out, elf.data() + names.sh_offset, names.sh_size);
  added.sh_name = static_cast<uint32_t>(names.sh_size);
  append(out, name.c_str(), name.size() + 1);
  new_names.sh_size = names.sh_size + name.size() + 1;

  alignTo(out, 8);
  Elf64_Ehdr new_header = *header;
  new_header.e_shoff = out.size();
  new_header.e_shnum = static_cast<uint16_t>(header->e_shnum + 1);
  for (size_t i = 0; i < header->e_shnum; ++i) {
    Elf64_Shdr section = sectionHeader(elf, *header, i);
    append(out, i == header->e_shstrndx ? &new_names : &section, sizeof section);
  }
  append(out, &added, sizeof added);
  std::memcpy(out.data(), &new_header, sizeof new_header);
  return out;
}

std::optional<SectionSpan> findSection(const std::vector<char>& elf, const std::string& name,
                                       std::string* error) {
  std::optional<Elf64_Ehdr> header = elfHeader(elf, error);
  if (!header) return std::nullopt;
  Elf64_Shdr names = sectionHeader(elf, *header, header->e_shstrndx);
  if (!inside(elf, names) || names.sh_type != SHT_STRTAB) {
    *error = "its section name table is broken";
    return std::nullopt;
  }
  const char* table = elf.data() + names.sh_offset;
  for (size_t i = 0; i < header->e_shnum; ++i) {
    Elf64_Shdr section = sectionHeader(elf, *header, i);
    if (section.sh_name >= names.sh_size) continue;
    size_t room = names.sh_size - section.sh_name;
    size_t length = strnlen(table + section.sh_name, room);
    if (length == room || name != std::string(table + section.sh_name, length)) continue;
    if (section.sh_type == SHT_NOBITS || !inside(elf, section)) {
      *error = "its section `" + name + "` lies outside the file";
      return std::nullopt;
    }
    return SectionSpan{section.sh_offset, section.sh_size};
  }
  *error = "it has no section `" + name + "`";
  return std::nullopt;
}

std::optional<std::string> sectionContents(const std::vector<char>& elf, const std::string& name,
                                           std::string* error) {
  std::optional<SectionSpan> span = findSection(elf, name, error);
  if (!span) {
    if (error->rfind("it has no section", 0) == 0) *error += " (it was not written by `kq build`)";
    return std::nullopt;
  }
  return std::string(elf.data() + span->offset, span->size);
}

}  // namespace kq::runtime
