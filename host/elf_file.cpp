#include "host/elf_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kq::host {
namespace {

void readSymbols(Elf* elf, std::vector<ElfSymbol>& out) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || shdr.sh_entsize == 0) continue;
    size_t count = shdr.sh_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (!name || !*name) continue;
      out.push_back({name, sym.st_value, sym.st_size});
    }
  }
}

void readSegments(Elf* elf, std::vector<ElfSegment>& out) {
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_LOAD) {
      out.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
    }
  }
}

}  // namespace

std::optional<ElfFile> readElfFile(const std::string& path, std::string& error) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    error = "libelf is out of date";
    return std::nullopt;
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open `" + path + "`: " + std::strerror(errno);
    return std::nullopt;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    close(fd);
    error = "`" + path + "` is not an ELF binary";
    return std::nullopt;
  }
  ElfFile file;
  readSymbols(elf, file.functions);
  readSegments(elf, file.segments);
  elf_end(elf);
  close(fd);
  return file;
}

}  // namespace kq::host
