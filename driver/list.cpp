// `kq list`: what a pattern matches, one per line, for scripts and for people.
#include <bpf/btf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/btf/btf.h"
#include "compiler/sema/packet_functions.h"
#include "compiler/sema/program.h"
#include "compiler/sema/types.h"
#include "driver/commands.h"
#include "host/perf_events.h"

namespace kq::driver {
namespace {

using host::Known;

int listTracepoints(const std::string& pattern, host::KernelInfo& kernel, Io& io) {
  std::string rest = pattern.substr(11);
  size_t colon = rest.find(':');
  std::string category_glob = rest.substr(0, colon);
  std::string event_glob = colon == std::string::npos ? "*" : rest.substr(colon + 1);
  auto categories = kernel.tracepointCategories();
  if (!categories) {
    io.err << "kq: error: " << categories.error().message << "\n";
    return 1;
  }
  size_t count = 0;
  for (const std::string& category : *categories) {
    if (!btf::globMatch(category_glob, category)) continue;
    auto events = kernel.tracepointEvents(category);
    if (!events) continue;
    for (const std::string& event : *events) {
      if (!btf::globMatch(event_glob, event)) continue;
      io.out << "tracepoint:" << category << ":" << event << "\n";
      ++count;
    }
  }
  return count ? 0 : (io.err << fmt::format("kq: error: no tracepoint matches `{}`\n", pattern), 1);
}

int listSyscalls(const std::string& pattern, host::KernelInfo& kernel, Io& io) {
  auto events = kernel.tracepointEvents("syscalls");
  if (!events) {
    io.err << "kq: error: " << events.error().message << "\n";
    return 1;
  }
  size_t count = 0;
  for (const std::string& event : *events) {
    if (event.rfind("sys_enter_", 0) != 0) continue;
    std::string name = event.substr(10);
    if (!btf::globMatch(pattern.substr(8), name)) continue;
    io.out << "syscall:" << name << "\n";
    ++count;
  }
  return count ? 0 : (io.err << fmt::format("kq: error: no syscall matches `{}`\n", pattern), 1);
}

/// `rawtracepoint:sched_*`: the kernel's tracepoints by their BTF handlers, those without
/// a tracefs event (`sched_update_nr_running_tp`) too.
int listRawTracepoints(const std::string& pattern, const btf::Btf& btf, Io& io) {
  std::string glob = pattern.substr(pattern.find(':') + 1);
  std::vector<std::string> names = btf.tracepointNames();
  std::sort(names.begin(), names.end());
  size_t count = 0;
  for (const std::string& name : names) {
    if (!btf::globMatch(glob, name)) continue;
    io.out << "rawtracepoint:" << name << "\n";
    ++count;
  }
  return count ? 0 : (io.err << fmt::format("kq: error: no raw tracepoint matches `{}`\n", pattern), 1);
}

/// `iter:*`: the kernel's BPF iterators (a `bpf_iter_NAME` function with its context
/// struct), each with what an event sees.
int listIterators(const std::string& pattern, const btf::Btf& btf, Io& io) {
  std::string glob = pattern.substr(5);
  size_t count = 0;
  std::vector<std::string_view> names = btf.functionNames();
  std::sort(names.begin(), names.end());
  for (std::string_view f : names) {
    constexpr std::string_view kPrefix = "bpf_iter_";
    if (f.rfind(kPrefix, 0) != 0) continue;
    std::string name(f.substr(kPrefix.size()));
    if (!btf.findStruct("bpf_iter__" + name) || !btf::globMatch(glob, name)) continue;
    auto fn = btf.findFunction(f);
    std::string args;
    for (size_t i = 1; fn && i < fn->params.size(); ++i) {
      args += (args.empty() ? "" : ", ") + fn->params[i].type.declaration(fn->params[i].name);
    }
    io.out << fmt::format("iter:{}({})\n", name, args);
    ++count;
  }
  return count ? 0 : (io.err << fmt::format("kq: error: no BPF iterator matches `{}`\n", pattern), 1);
}

/// Whether this machine opens `kind` (disabled, on CPU 0): a virtual machine often has no
/// hardware counters.
bool opensHere(const host::PerfEventKind& kind) {
  perf_event_attr attr{};
  attr.type = kind.type;
  attr.size = sizeof attr;
  attr.config = kind.config;
  attr.disabled = 1;
  int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return false;
  close(fd);
  return true;
}

/// `software:*`, `hardware:cache-*`: each event, what it counts, its default period, and
/// whether this machine has it.
int listPerfEvents(const std::string& pattern, Io& io) {
  bool hardware = pattern.rfind("hardware:", 0) == 0;
  std::string glob = pattern.substr(9);
  size_t count = 0;
  for (const host::PerfEventKind& k : host::perfEventKinds()) {
    if (k.hardware != hardware) continue;
    if (!btf::globMatch(glob, k.name) && (k.alias.empty() || !btf::globMatch(glob, k.alias))) continue;
    std::string name = fmt::format("{}:{}", hardware ? "hardware" : "software", k.name);
    std::string alias = k.alias.empty() ? "" : fmt::format(" (or :{})", k.alias);
    io.out << fmt::format("{:<32} {}{}; every {} by default{}\n", name, k.what, alias, k.default_period,
                          opensHere(k) ? "" : "; not on this machine");
    ++count;
  }
  return count ? 0 : (io.err << fmt::format("kq: error: no {} event matches `{}`\n",
                                            hardware ? "hardware" : "software", pattern), 1);
}

void noteTraceability(host::KernelInfo& kernel, Io& io) {
  if (kernel.inFilterFunctions("schedule") == Known::Unknown) {
    io.err << "note: " << kernel.filterFunctionsProblem()
           << "; listing functions that are in BTF and kallsyms\n";
  }
}

int listFunctions(const std::string& pattern, const btf::Btf& btf, host::KernelInfo& kernel,
                  Io& io) {
  std::string module_glob, function_glob = pattern;
  if (size_t colon = pattern.find(':'); colon != std::string::npos) {
    module_glob = pattern.substr(0, colon);
    function_glob = pattern.substr(colon + 1);
  }
  noteTraceability(kernel, io);
  size_t count = 0;
  for (const btf::Function& f : btf.matchFunctions(function_glob, true)) {
    std::string module = f.module.empty() ? "vmlinux" : f.module;
    if (!module_glob.empty() && !btf::globMatch(module_glob, module)) continue;
    if (!traceable(kernel, f.name)) continue;
    io.out << (f.module.empty() ? f.name : f.module + ":" + f.name) << "\n";
    ++count;
  }
  if (count == 0) {
    io.err << fmt::format("kq: error: no traceable kernel function matches `{}`\n", pattern);
    if (function_glob.find_first_of("*?") == std::string::npos) {
      if (auto close = sema::closestName(function_glob, btf.functionNames(true))) {
        io.err << "note: did you mean `" << *close << "`?\n";
      }
    }
    return 1;
  }
  return 0;
}

// Every traceable function taking a `struct sk_buff *`, with that argument's position:
// the set packet tracing attaches to; then the tracepoints carrying one, which it falls
// back to where the kernel has no kprobes; then the XDP and TC programs loaded.
int listPacketFunctions(const btf::Btf& btf, host::KernelInfo& kernel, Io& io) {
  auto skb = btf.findStruct("sk_buff");
  if (!skb) {
    io.err << "kq: error: the kernel's BTF has no `struct sk_buff`\n";
    return 1;
  }
  noteTraceability(kernel, io);
  for (const sema::PacketFunction& p : sema::packetFunctions(btf, kernel)) {
    const btf::Function& f = p.function;
    io.out << fmt::format("{} ({}: arg{})\n", f.name, f.params[p.skb].name.empty() ? "skb" : f.params[p.skb].name, p.skb);
  }
  std::map<std::string, uint32_t> events;
  for (const auto& [handler, slot] : btf.tracepointsTaking("sk_buff")) events.emplace(handler.name, slot);
  auto categories = kernel.tracepointCategories();
  if (!categories) return 0;
  for (const std::string& category : *categories) {
    auto listed = kernel.tracepointEvents(category);
    if (!listed) continue;
    for (const std::string& event : *listed) {
      auto it = events.find(event);
      if (it != events.end()) io.out << fmt::format("tracepoint:{}:{} (skb: arg{})\n", category, event, it->second);
    }
  }
  for (const host::BpfProgram& p : sema::packetPrograms(kernel)) {
    io.out << fmt::format("bpf:{} ({}, id {}: its verdict, through fexit)\n", p.displayName(), p.type_name, p.id);
  }
  std::string module;
  if (auto chain = sema::netfilterChain(btf, kernel, module)) {
    io.out << fmt::format("nft_do_chain [{}] (skb: arg{}'s skb; its verdict, through fexit)\n", module, chain->pkt);
  }
  return 0;
}

}  // namespace

bool traceable(host::KernelInfo& kernel, const std::string& name) {
  Known listed = kernel.inFilterFunctions(name);
  if (listed != Known::Unknown) return listed == Known::Yes;
  return kernel.inKallsyms(name) != Known::No;
}

int runList(const std::string& pattern, const std::string& btf_path, Io& io) {
  if (pattern.rfind("software:", 0) == 0 || pattern.rfind("hardware:", 0) == 0) return listPerfEvents(pattern, io);
  if (pattern.rfind("usdt:", 0) == 0) return listUsdt(pattern, io);
  auto env = io.load_kernel(btf_path);
  if (!env) {
    io.err << "kq: error: " << env.error().message << "\n";
    return 1;
  }
  return listMatches(pattern, *env, io);
}

int listMatches(const std::string& pattern, KernelEnvironment& env, Io& io) {
  if (pattern.rfind("software:", 0) == 0 || pattern.rfind("hardware:", 0) == 0) return listPerfEvents(pattern, io);
  if (pattern.rfind("usdt:", 0) == 0) return listUsdt(pattern, io);
  if (pattern.rfind("tracepoint:", 0) == 0) return listTracepoints(pattern, *env.kernel, io);
  if (pattern.rfind("rawtracepoint:", 0) == 0 || pattern.rfind("rt:", 0) == 0) {
    return listRawTracepoints(pattern, *env.btf, io);
  }
  if (pattern.rfind("syscall:", 0) == 0) return listSyscalls(pattern, *env.kernel, io);
  if (pattern.rfind("iter:", 0) == 0) return listIterators(pattern, *env.btf, io);
  if (pattern.rfind("bpf:", 0) == 0) return listBpfPrograms(pattern, *env.kernel, io);
  if (pattern == "packet") return listPacketFunctions(*env.btf, *env.kernel, io);
  return listFunctions(pattern, *env.btf, *env.kernel, io);
}

}  // namespace kq::driver
