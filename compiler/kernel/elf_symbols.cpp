#include "compiler/kernel/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kq::kernel {

Result<std::vector<ElfSymbol>> readFunctionSymbols(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return Error{"libelf is out of date"};
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot open `{}`: {}", path, std::strerror(errno))};
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    close(fd);
    return Error{fmt::format("`{}` is not an ELF binary", path)};
  }
  std::vector<ElfSymbol> out;
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
  elf_end(elf);
  close(fd);
  std::sort(out.begin(), out.end(),
            [](const ElfSymbol& a, const ElfSymbol& b) { return a.name < b.name; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const ElfSymbol& a, const ElfSymbol& b) { return a.name == b.name; }),
            out.end());
  return out;
}

}  // namespace kq::kernel
