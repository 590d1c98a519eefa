// `kq list 'bpf:*'` and `kq info bpf:PROG`: the BPF programs loaded now, as a `bpf:` probe
// sees each: its context as the kernel's struct, its verdict as an enum.
#include <fmt/format.h>

#include "compiler/btf/btf.h"
#include "driver/commands.h"
#include "host/bpf_programs.h"

namespace kq::driver {
namespace {

bool matches(const std::string& pattern, const host::BpfProgram& p) {
  if (!pattern.empty() && pattern.find_first_not_of("0123456789") == std::string::npos) {
    return pattern == std::to_string(p.id);
  }
  return btf::globMatch(pattern, p.displayName()) || btf::globMatch(pattern, p.name);
}

std::string what(const host::BpfProgram& p) {
  std::string out = fmt::format("{}, id {}", p.type_name, p.id);
  if (p.function != p.name && !p.function.empty()) out += fmt::format(", kernel name {}", p.name);
  if (!p.hasBtf()) out += ", no BTF: not traceable";
  return out;
}

}  // namespace

int listBpfPrograms(const std::string& pattern, host::KernelInfo& kernel, Io& io) {
  std::string glob = pattern.substr(pattern.find(':') + 1);
  auto programs = kernel.bpfPrograms();
  if (!programs) {
    io.err << "kq: error: " << programs.error().message << "\n";
    return 1;
  }
  size_t count = 0;
  for (const host::BpfProgram& p : *programs) {
    if (!matches(glob, p)) continue;
    std::string shape = p.hasBtf() ? fmt::format("({}) -> {}", host::tracedParams(p), host::tracedReturn(p)) : "";
    io.out << fmt::format("bpf:{}{}  ({})\n", p.displayName(), shape, what(p));
    ++count;
  }
  if (count) return 0;
  io.err << fmt::format("kq: error: no loaded BPF program matches `{}`{}\n", pattern,
                        programs->empty() ? " (none is loaded)" : "");
  return 1;
}

int bpfProgramInfo(const std::string& name, host::KernelInfo& kernel, Io& io) {
  auto programs = kernel.bpfPrograms();
  if (!programs) {
    io.err << "kq: error: " << programs.error().message << "\n";
    return 1;
  }
  size_t count = 0;
  for (const host::BpfProgram& p : *programs) {
    if (!matches(name, p)) continue;
    io.out << fmt::format("{}bpf:{}  ({}, tag {})\n", count ? "\n" : "", p.displayName(), what(p), p.tag);
    if (p.hasBtf()) {
      io.out << fmt::format("\nas fentry and fexit see it:\n  {};\n", host::tracedSignature(p));
      const auto& verdicts = host::verdictNames(p.type);
      if (!verdicts.empty()) {
        std::string names;
        for (const auto& [value, verdict] : verdicts) names += fmt::format("{}{} = {}", names.empty() ? "" : ", ", verdict, value);
        io.out << "\n`return` (fexit), the verdict:\n  " << names << "\n";
      }
    }
    ++count;
  }
  if (count) return 0;
  io.err << fmt::format("kq: error: no loaded BPF program is named `{}`\n", name);
  std::vector<std::string> names;
  for (const host::BpfProgram& p : *programs) names.push_back(p.displayName());
  didYouMean(io, name, {names.begin(), names.end()});
  return 1;
}

}  // namespace kq::driver
