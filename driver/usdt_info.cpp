// `kq list 'usdt:PATH:*'` and `kq info usdt:PATH:[PROVIDER:]NAME`: the probes a binary's
// `.note.stapsdt` declares, read from the file alone (no kernel, no root).
#include <fmt/format.h>

#include "compiler/btf/btf.h"
#include "compiler/sema/types.h"
#include "driver/commands.h"
#include "host/binary_path.h"
#include "host/usdt.h"

namespace kq::driver {
namespace {

struct UsdtPattern {
  std::string binary;
  std::string provider = "*";
  std::string name = "*";
};

/// `usdt:PATH`, `usdt:PATH:NAME`, `usdt:PATH:PROVIDER:NAME` (globs in the last two).
UsdtPattern parsePattern(const std::string& pattern) {
  UsdtPattern out;
  std::string rest = pattern.substr(pattern.find(':') + 1);
  size_t colon = rest.find(':');
  out.binary = rest.substr(0, colon);
  if (colon == std::string::npos) return out;
  std::string probe = rest.substr(colon + 1);
  size_t second = probe.find(':');
  if (second == std::string::npos) {
    out.name = probe.empty() ? "*" : probe;
  } else {
    out.provider = probe.substr(0, second);
    out.name = probe.substr(second + 1);
  }
  return out;
}

bool matches(const UsdtPattern& p, const host::UsdtProbe& probe) {
  return btf::globMatch(p.provider, probe.provider) && btf::globMatch(p.name, probe.name);
}

std::string argType(const host::UsdtArg& a) {
  return fmt::format("{}{}", a.is_signed ? "s" : "u", a.size * 8);
}

/// The probes of `p`'s binary (a library or program by name, as in a probe), its name made
/// the file's path.
Result<std::vector<host::UsdtProbe>> probesOf(UsdtPattern& p, Io& io) {
  auto path = host::findBinary(p.binary);
  if (!path) {
    io.err << fmt::format("kq: error: no shared library or program is named `{}`\n", p.binary);
    return Error{"no such binary"};
  }
  p.binary = *path;
  auto probes = host::readUsdtProbes(p.binary);
  if (!probes) {
    io.err << "kq: error: " << probes.error().message << "\n";
    return probes.error();
  }
  return probes;
}

}  // namespace

int listUsdt(const std::string& pattern, Io& io) {
  UsdtPattern p = parsePattern(pattern);
  auto probes = probesOf(p, io);
  if (!probes) return 1;
  size_t count = 0;
  for (const host::UsdtProbe& probe : *probes) {
    if (!matches(p, probe)) continue;
    std::string args;
    for (const host::UsdtArg& a : probe.sites.front().args) args += (args.empty() ? "" : ", ") + argType(a);
    std::string sites = probe.sites.size() == 1 ? "" : fmt::format(" ({} sites)", probe.sites.size());
    io.out << fmt::format("usdt:{}:{}:{}({}){}\n", p.binary, probe.provider, probe.name, args, sites);
    ++count;
  }
  if (count) return 0;
  if (probes->empty()) {
    io.err << fmt::format("kq: error: `{}` has no USDT probes (no `.note.stapsdt` section)\n", p.binary);
  } else {
    io.err << fmt::format("kq: error: no USDT probe of `{}` matches `{}:{}`\n", p.binary, p.provider, p.name);
  }
  return 1;
}

int usdtInfo(const std::string& what, Io& io) {
  UsdtPattern p = parsePattern(what);
  auto probes = probesOf(p, io);
  if (!probes) return 1;
  size_t count = 0;
  for (const host::UsdtProbe& probe : *probes) {
    if (!matches(p, probe)) continue;
    if (count++) io.out << "\n";
    io.out << fmt::format("usdt:{}:{}:{}\n", p.binary, probe.provider, probe.name);
    for (const host::UsdtSite& site : probe.sites) {
      io.out << fmt::format("\nsite at 0x{:x} (file offset 0x{:x})", site.address, site.file_offset);
      if (site.semaphore_offset) io.out << fmt::format(", semaphore at file offset 0x{:x}", site.semaphore_offset);
      io.out << "\n";
      if (!site.problem.empty()) {
        io.out << "  cannot be traced: " << site.problem << "\n";
        continue;
      }
      for (size_t i = 0; i < site.args.size(); ++i) {
        io.out << fmt::format("  arg{}  {:<4} {}\n", i, argType(site.args[i]), site.args[i].text);
      }
      if (site.args.empty()) io.out << "  no arguments\n";
    }
  }
  if (count) return 0;
  io.err << fmt::format("kq: error: `{}` has no USDT probe `{}:{}`\n", p.binary, p.provider, p.name);
  std::vector<std::string> names;
  for (const host::UsdtProbe& probe : *probes) names.push_back(probe.name);
  if (auto close = sema::closestName(p.name, {names.begin(), names.end()})) {
    io.err << "note: did you mean `" << *close << "`?\n";
  }
  return 1;
}

}  // namespace kq::driver
