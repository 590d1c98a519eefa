#include "host/usdt.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace kq::host {
namespace {

constexpr uint32_t kNoteStapsdt = 3;  // NT_STAPSDT

/// x86-64 registers by every name an operand may give them, as `struct pt_regs` members.
struct RegisterName {
  std::string_view name;
  std::string_view member;
  bool high_byte = false;
};

constexpr RegisterName kRegisters[] = {
    {"rax", "ax"}, {"eax", "ax"}, {"ax", "ax"}, {"al", "ax"}, {"ah", "ax", true},
    {"rbx", "bx"}, {"ebx", "bx"}, {"bx", "bx"}, {"bl", "bx"}, {"bh", "bx", true},
    {"rcx", "cx"}, {"ecx", "cx"}, {"cx", "cx"}, {"cl", "cx"}, {"ch", "cx", true},
    {"rdx", "dx"}, {"edx", "dx"}, {"dx", "dx"}, {"dl", "dx"}, {"dh", "dx", true},
    {"rsi", "si"}, {"esi", "si"}, {"si", "si"}, {"sil", "si"},
    {"rdi", "di"}, {"edi", "di"}, {"di", "di"}, {"dil", "di"},
    {"rbp", "bp"}, {"ebp", "bp"}, {"bp", "bp"}, {"bpl", "bp"},
    {"rsp", "sp"}, {"esp", "sp"}, {"sp", "sp"}, {"spl", "sp"},
    {"rip", "ip"},
};

std::optional<RegisterName> registerNamed(std::string_view name) {
  for (const RegisterName& r : kRegisters) {
    if (r.name == name) return r;
  }
  // r8..r15 and their d, w and b halves.
  if (name.size() >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
    std::string_view digits = name.substr(1);
    while (!digits.empty() && (digits.back() == 'd' || digits.back() == 'w' || digits.back() == 'b')) {
      digits.remove_suffix(1);
    }
    int n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && n >= 8 && n <= 15 &&
        name.size() - 1 - digits.size() <= 1) {
      static const std::string_view members[] = {"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"};
      return RegisterName{name, members[n - 8]};
    }
  }
  return std::nullopt;
}

std::optional<int64_t> integer(std::string_view s) {
  bool negative = !s.empty() && s.front() == '-';
  if (negative || (!s.empty() && s.front() == '+')) s.remove_prefix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

Error bad(std::string_view arg, std::string_view why) {
  return Error{fmt::format("cannot read USDT argument `{}`: {}", arg, why)};
}

/// `%reg` in an operand: the register, or why not.
Result<RegisterName> registerOperand(std::string_view arg, std::string_view text) {
  if (text.empty() || text.front() != '%') return bad(arg, fmt::format("`{}` is not a register", text));
  auto reg = registerNamed(text.substr(1));
  if (!reg) return bad(arg, fmt::format("kq does not know register `{}`", text));
  return *reg;
}

Result<UsdtArg> parseArg(std::string_view text, const SymbolAddress& symbol) {
  UsdtArg out;
  out.text = std::string(text);
  size_t at = text.find('@');
  if (at == std::string_view::npos) return bad(text, "no `@` after its size");
  auto size = integer(text.substr(0, at));
  if (!size || (std::abs(*size) != 1 && std::abs(*size) != 2 && std::abs(*size) != 4 && std::abs(*size) != 8)) {
    return bad(text, "its size is not 1, 2, 4 or 8 bytes (negative when signed)");
  }
  out.is_signed = *size < 0;
  out.size = static_cast<uint32_t>(std::abs(*size));
  std::string_view operand = text.substr(at + 1);
  if (operand.empty()) return bad(text, "nothing after `@`");
  if (operand.front() == '$') {
    auto value = integer(operand.substr(1));
    if (!value) return bad(text, "a constant that is not a number");
    out.kind = UsdtArg::Kind::Constant;
    out.value = *value;
    return out;
  }
  if (operand.front() == '%') {
    auto reg = registerOperand(text, operand);
    if (!reg) return reg.error();
    if (reg->member == "ip") return bad(text, "%rip is not a value");
    out.kind = UsdtArg::Kind::Register;
    out.reg = std::string(reg->member);
    out.high_byte = reg->high_byte;
    return out;
  }
  // [displacement](base[,index[,scale]]): displacement is a number, a symbol, or symbol±number.
  size_t open = operand.find('(');
  if (open == std::string_view::npos || operand.back() != ')') {
    return bad(text, "not a register, a constant or a memory operand");
  }
  out.kind = UsdtArg::Kind::Memory;
  std::string_view disp = operand.substr(0, open);
  std::string_view inside = operand.substr(open + 1, operand.size() - open - 2);
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t comma = inside.find(',', start);
    parts.push_back(inside.substr(start, comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (parts.size() > 3) return bad(text, "more than base, index and scale in parentheses");
  if (!parts[0].empty()) {
    auto base = registerOperand(text, parts[0]);
    if (!base) return base.error();
    out.reg = std::string(base->member);
  }
  if (parts.size() >= 2) {
    auto index = registerOperand(text, parts[1]);
    if (!index) return index.error();
    out.index = std::string(index->member);
  }
  if (parts.size() == 3) {
    auto scale = integer(parts[2]);
    if (!scale || (*scale != 1 && *scale != 2 && *scale != 4 && *scale != 8)) return bad(text, "a scale other than 1, 2, 4 or 8");
    out.scale = static_cast<uint32_t>(*scale);
  }
  if (disp.empty()) return out;
  if (auto value = integer(disp)) {
    if (out.reg == "ip") return bad(text, "a %rip-relative number depends on the instruction's length");
    out.value = *value;
    return out;
  }
  // A symbol, with what is added to it: `counter(%rip)`, `table+8(%rip)`.
  size_t sign = disp.find_first_of("+-", 1);
  std::string_view name = disp.substr(0, sign);
  int64_t add = 0;
  if (sign != std::string_view::npos) {
    auto value = integer(disp.substr(sign));
    if (!value) return bad(text, fmt::format("`{}` is not a number", disp.substr(sign)));
    add = *value;
  }
  std::optional<uint64_t> address = symbol ? symbol(name) : std::nullopt;
  if (!address) return bad(text, fmt::format("the binary has no symbol `{}`", name));
  if (out.reg != "ip") return bad(text, "a symbol's address is known only %rip-relative");
  out.value = static_cast<int64_t>(*address) + add;
  return out;
}

struct Segment {
  uint64_t offset, vaddr, filesz;
};

std::optional<uint64_t> fileOffset(const std::vector<Segment>& segments, uint64_t address) {
  for (const Segment& s : segments) {
    if (address >= s.vaddr && address < s.vaddr + s.filesz) return address - s.vaddr + s.offset;
  }
  return std::nullopt;
}

/// What one binary's notes need of the rest of it: segments, `.stapsdt.base` and symbols.
struct ElfView {
  std::vector<Segment> segments;
  std::optional<uint64_t> sdt_base;
  std::map<std::string, uint64_t, std::less<>> symbols;
};

ElfView viewOf(Elf* elf) {
  ElfView view;
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) == 0) {
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_LOAD) {
        view.segments.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
      }
    }
  }
  size_t strndx = 0;
  elf_getshdrstrndx(elf, &strndx);
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = elf_strptr(elf, strndx, shdr.sh_name);
    if (name && std::strcmp(name, ".stapsdt.base") == 0) view.sdt_base = shdr.sh_addr;
    if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || shdr.sh_entsize == 0) continue;
    for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      const char* sym_name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (sym_name && *sym_name) view.symbols.emplace(sym_name, sym.st_value);
    }
  }
  return view;
}

/// The probes of one `.note.stapsdt` section's data.
void readNotes(Elf* elf, Elf_Data* data, const ElfView& view, std::map<std::pair<std::string, std::string>, UsdtProbe>& out) {
  size_t word = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
  auto symbol = [&](std::string_view name) -> std::optional<uint64_t> {
    auto it = view.symbols.find(name);
    if (it == view.symbols.end()) return std::nullopt;
    return it->second;
  };
  GElf_Nhdr note;
  size_t offset = 0, name_at = 0, desc_at = 0;
  while ((offset = gelf_getnote(data, offset, &note, &name_at, &desc_at)) > 0) {
    const char* bytes = static_cast<const char*>(data->d_buf);
    if (note.n_type != kNoteStapsdt || note.n_namesz != 8 || std::memcmp(bytes + name_at, "stapsdt", 8) != 0) continue;
    if (note.n_descsz < 3 * word + 3) continue;
    const char* desc = bytes + desc_at;
    auto address = [&](size_t i) {
      uint64_t v = 0;
      if (word == 8) std::memcpy(&v, desc + 8 * i, 8);
      else {
        uint32_t v32 = 0;
        std::memcpy(&v32, desc + 4 * i, 4);
        v = v32;
      }
      return v;
    };
    uint64_t pc = address(0), base = address(1), semaphore = address(2);
    const char* end = desc + note.n_descsz;
    const char* provider = desc + 3 * word;
    const char* name = provider + strnlen(provider, end - provider) + 1;
    if (name >= end) continue;
    const char* args = name + strnlen(name, end - name) + 1;
    std::string args_text = args < end ? std::string(args, strnlen(args, end - args)) : "";
    // Prelink moved the file: the note's base is where .stapsdt.base was when it was written.
    if (view.sdt_base && base) {
      pc += *view.sdt_base - base;
      if (semaphore) semaphore += *view.sdt_base - base;
    }
    UsdtSite site;
    site.address = pc;
    site.args_text = args_text;
    auto offset_in_file = fileOffset(view.segments, pc);
    if (!offset_in_file) continue;  // not in a loaded segment: no place to attach
    site.file_offset = *offset_in_file;
    if (semaphore) {
      auto sem = fileOffset(view.segments, semaphore);
      if (!sem) site.problem = fmt::format("its semaphore at 0x{:x} is in no loaded segment", semaphore);
      else site.semaphore_offset = *sem;
    }
    auto parsed = parseUsdtArgs(args_text, symbol);
    if (parsed) site.args = parsed.take();
    else if (site.problem.empty()) site.problem = parsed.error().message;
    UsdtProbe& probe = out[{provider, std::string(name, strnlen(name, end - name))}];
    probe.provider = provider;
    probe.name = std::string(name, strnlen(name, end - name));
    probe.sites.push_back(std::move(site));
  }
}

}  // namespace

Result<std::vector<UsdtArg>> parseUsdtArgs(std::string_view text, const SymbolAddress& symbol) {
  std::vector<UsdtArg> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) break;
    size_t end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    auto arg = parseArg(text.substr(i, end - i), symbol);
    if (!arg) return arg.error();
    out.push_back(arg.take());
    i = end;
  }
  return out;
}

Result<std::vector<UsdtProbe>> readUsdtProbes(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return Error{"libelf is out of date"};
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot open `{}`: {}", path, std::strerror(errno))};
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    close(fd);
    return Error{fmt::format("`{}` is not an ELF binary", path)};
  }
  ElfView view = viewOf(elf);
  std::map<std::pair<std::string, std::string>, UsdtProbe> probes;
  size_t strndx = 0;
  elf_getshdrstrndx(elf, &strndx);
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE) continue;
    const char* name = elf_strptr(elf, strndx, shdr.sh_name);
    if (!name || std::strcmp(name, ".note.stapsdt") != 0) continue;
    if (Elf_Data* data = elf_getdata(scn, nullptr)) readNotes(elf, data, view, probes);
  }
  elf_end(elf);
  close(fd);
  std::vector<UsdtProbe> out;
  for (auto& [key, probe] : probes) out.push_back(std::move(probe));
  return out;
}

}  // namespace kq::host
