// `kq list 'bpf:*'` and `kq info bpf:PROG`: the BPF programs loaded now, as a `bpf:` probe
// sees each: its context as the kernel's struct, its verdict as an enum.
#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

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

/// The loaded programs `pattern` names, and how many are loaded; nothing (said) when kq
/// cannot list them.
std::optional<std::pair<std::vector<host::BpfProgram>, size_t>> matching(const std::string& pattern,
                                                                         host::KernelInfo& kernel, Io& io) {
  auto programs = kernel.bpfPrograms();
  if (!programs) {
    io.err << "kq: error: " << programs.error().message << "\n";
    return std::nullopt;
  }
  std::vector<host::BpfProgram> out;
  for (const host::BpfProgram& p : *programs) {
    if (matches(pattern, p)) out.push_back(p);
  }
  return std::pair{std::move(out), programs->size()};
}

}  // namespace

int listBpfPrograms(const std::string& pattern, host::KernelInfo& kernel, Io& io) {
  auto found = matching(pattern.substr(pattern.find(':') + 1), kernel, io);
  if (!found) return 1;
  for (const host::BpfProgram& p : found->first) {
    std::string shape = p.hasBtf() ? fmt::format("({}) -> {}", host::tracedParams(p), host::tracedReturn(p)) : "";
    io.out << fmt::format("bpf:{}{}  ({})\n", p.displayName(), shape, what(p));
  }
  if (!found->first.empty()) return 0;
  io.err << fmt::format("kq: error: no loaded BPF program matches `{}`{}\n", pattern,
                        found->second ? "" : " (none is loaded)");
  return 1;
}

int bpfProgramInfo(const std::string& name, host::KernelInfo& kernel, Io& io) {
  auto found = matching(name, kernel, io);
  if (!found) return 1;
  bool first = true;
  for (const host::BpfProgram& p : found->first) {
    io.out << fmt::format("{}bpf:{}  ({}, tag {})\n", first ? "" : "\n", p.displayName(), what(p), p.tag);
    first = false;
    if (p.hasBtf()) {
      io.out << fmt::format("\nas fentry and fexit see it:\n  {};\n", host::tracedSignature(p));
      if (const host::Verdicts* verdicts = host::verdictsOf(p.type)) {
        std::string names;
        for (const auto& [value, verdict] : verdicts->names) names += fmt::format("{}{} = {}", names.empty() ? "" : ", ", verdict, value);
        io.out << "\n`return` (fexit), the verdict:\n  " << names << "\n";
      }
    }
  }
  if (!found->first.empty()) return 0;
  io.err << fmt::format("kq: error: no loaded BPF program is named `{}`{}\n", name,
                        found->second ? "" : " (none is loaded)");
  std::vector<std::string> names;
  auto programs = kernel.bpfPrograms();
  for (const host::BpfProgram& p : *programs) names.push_back(p.displayName());
  didYouMean(io, name, {names.begin(), names.end()});
  return 1;
}

}  // namespace kq::driver
