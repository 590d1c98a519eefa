#include "compiler/lower/disassemble.h"

#include <map>
#include <memory>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <fmt/format.h>

namespace kq::lower {
namespace {

/// A program in the object: its section and where it starts in it.
struct ProgramSymbol {
  std::string name;
  llvm::object::SectionRef section;
  uint64_t offset;
  uint64_t size;
};

struct ObjectView {
  std::unique_ptr<llvm::object::ObjectFile> object;
  std::unique_ptr<llvm::DWARFContext> dwarf;
  std::vector<ProgramSymbol> programs;
};

Result<ObjectView> open(const std::vector<char>& elf) {
  LLVMInitializeBPFTargetInfo();
  LLVMInitializeBPFTargetMC();
  LLVMInitializeBPFDisassembler();
  llvm::MemoryBufferRef buffer(llvm::StringRef(elf.data(), elf.size()), "kq.o");
  auto object = llvm::object::ObjectFile::createObjectFile(buffer);
  if (!object) return Error{"cannot read the compiled object: " + llvm::toString(object.takeError())};
  ObjectView view;
  view.object = std::move(*object);
  view.dwarf = llvm::DWARFContext::create(*view.object);
  for (const llvm::object::SymbolRef& symbol : view.object->symbols()) {
    auto type = symbol.getType();
    if (!type || *type != llvm::object::SymbolRef::ST_Function) continue;
    auto name = symbol.getName();
    auto section = symbol.getSection();
    auto value = symbol.getValue();
    if (!name || !section || !value || *section == view.object->section_end()) {
      llvm::consumeError(name.takeError());
      continue;
    }
    uint64_t size = llvm::object::ELFSymbolRef(symbol).getSize();
    view.programs.push_back({name->str(), **section, *value, size});
  }
  return view;
}

std::optional<LineColumn> lineOf(const ObjectView& view, const ProgramSymbol& p, uint64_t offset) {
  llvm::DILineInfo info = view.dwarf->getLineInfoForAddress(
      {offset, p.section.getIndex()}, llvm::DILineInfoSpecifier());
  if (info.Line == 0) return std::nullopt;
  return LineColumn{info.Line, info.Column};
}

}  // namespace

Result<std::string> disassemble(const std::vector<char>& elf, const SourceFile& source) {
  auto view = open(elf);
  if (!view) return view.error();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget("bpfel", error);
  if (!target) return Error{"LLVM has no BPF target: " + error};
  llvm::Triple triple("bpfel");
  std::unique_ptr<llvm::MCRegisterInfo> mri(target->createMCRegInfo("bpfel"));
  llvm::MCTargetOptions options;
  std::unique_ptr<llvm::MCAsmInfo> mai(target->createMCAsmInfo(*mri, "bpfel", options));
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo("bpfel", "v3", ""));
  std::unique_ptr<llvm::MCInstrInfo> mii(target->createMCInstrInfo());
  llvm::MCContext context(triple, mai.get(), mri.get(), sti.get());
  std::unique_ptr<llvm::MCDisassembler> disassembler(target->createMCDisassembler(*sti, context));
  std::unique_ptr<llvm::MCInstPrinter> printer(
      target->createMCInstPrinter(triple, 0, *mai, *mii, *mri));
  if (!disassembler || !printer) return Error{"LLVM cannot disassemble BPF"};

  std::string out;
  for (const ProgramSymbol& p : view->programs) {
    auto name = p.section.getName();
    auto contents = p.section.getContents();
    if (!name || !contents) return Error{"cannot read a section of the compiled object"};
    out += fmt::format("{}:  # section {}\n", p.name, name->str());
    llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t*>(contents->data()), contents->size());
    std::optional<LineColumn> last;
    uint64_t end = std::min<uint64_t>(p.offset + p.size, bytes.size());
    for (uint64_t at = p.offset; at < end;) {
      auto here = lineOf(*view, p, at);
      if (here && (!last || here->line != last->line || here->column != last->column)) {
        std::string_view line = source.lineText(here->line);
        std::string snippet(line.substr(std::min<size_t>(here->column ? here->column - 1 : 0, line.size()), 40));
        out += fmt::format("  ; {}:{}:{}  {}\n", source.name(), here->line, here->column, snippet);
        last = here;
      }
      llvm::MCInst inst;
      uint64_t size = 0;
      if (disassembler->getInstruction(inst, size, bytes.slice(at), at, llvm::nulls()) !=
              llvm::MCDisassembler::Success ||
          size == 0) {
        out += fmt::format("  {:4}: <unknown>\n", (at - p.offset) / 8);
        at += 8;
        continue;
      }
      std::string text;
      llvm::raw_string_ostream stream(text);
      printer->printInst(&inst, at, "", *sti, stream);
      stream.flush();
      size_t first = text.find_first_not_of(" \t");
      out += fmt::format("  {:4}: {}\n", (at - p.offset) / 8, first == std::string::npos ? text : text.substr(first));
      at += size;
    }
    out += "\n";
  }
  return out;
}

std::optional<LineColumn> sourceOfInstruction(const std::vector<char>& elf,
                                              const std::string& program, int index) {
  auto view = open(elf);
  if (!view || index < 0) return std::nullopt;
  for (const ProgramSymbol& p : view->programs) {
    if (p.name == program) return lineOf(*view, p, p.offset + static_cast<uint64_t>(index) * 8);
  }
  return std::nullopt;
}

}  // namespace kq::lower
