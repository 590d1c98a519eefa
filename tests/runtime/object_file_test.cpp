#include "runtime/object_file.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

namespace kq::runtime {
namespace {

/// A BPF ELF file with a null section and its section name table only.
std::vector<char> minimalObject() {
  const char names[] = "\0.shstrtab";
  std::vector<char> elf(sizeof(Elf64_Ehdr) + sizeof names + 2 * sizeof(Elf64_Shdr));
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_machine = EM_BPF;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 2;
  header.e_shstrndx = 1;
  header.e_shoff = sizeof header + sizeof names;
  std::memcpy(elf.data(), &header, sizeof header);
  std::memcpy(elf.data() + sizeof header, names, sizeof names);
  Elf64_Shdr sections[2]{};
  sections[1].sh_type = SHT_STRTAB;
  sections[1].sh_name = 1;
  sections[1].sh_offset = sizeof header;
  sections[1].sh_size = sizeof names;
  std::memcpy(elf.data() + header.e_shoff, sections, sizeof sections);
  return elf;
}

TEST(ObjectFile, AddedSectionReadsBack) {
  std::string error;
  std::vector<char> elf = minimalObject();
  EXPECT_FALSE(sectionContents(elf, kPlanSection, &error));
  EXPECT_EQ(error, "it has no section `.kq.plan` (it was not written by `kq build`)");
  auto added = addSection(elf, kPlanSection, "{\"plan\": 1}", &error);
  ASSERT_TRUE(added) << error;
  // Kept as it was, but for the header (where the section headers are now).
  EXPECT_TRUE(std::equal(elf.begin() + sizeof(Elf64_Ehdr), elf.end(),
                         added->begin() + sizeof(Elf64_Ehdr)));
  auto contents = sectionContents(*added, kPlanSection, &error);
  ASSERT_TRUE(contents) << error;
  EXPECT_EQ(*contents, "{\"plan\": 1}");
  EXPECT_EQ(sectionContents(*added, ".shstrtab", &error)->substr(1, 9), ".shstrtab");
}

TEST(ObjectFile, EveryTruncationIsRefused) {
  std::string error;
  std::vector<char> whole = *addSection(minimalObject(), kPlanSection, "plan", &error);
  for (size_t size = 0; size < whole.size(); ++size) {
    std::vector<char> cut(whole.begin(), whole.begin() + static_cast<long>(size));
    error.clear();
    EXPECT_FALSE(sectionContents(cut, kPlanSection, &error)) << size;
    EXPECT_FALSE(error.empty());
  }
  EXPECT_FALSE(sectionContents({'n', 'o'}, kPlanSection, &error));
  EXPECT_EQ(error, "it is not an ELF file");
}

}  // namespace
}  // namespace kq::runtime
