#include "runtime/loader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "runtime/libbpf_log.h"

namespace kq::runtime {

const char* attachName(Attach attach) {
  switch (attach) {
    case Attach::Fentry: return "fentry";
    case Attach::Fexit: return "fexit";
    case Attach::Kprobe: return "kprobe";
    case Attach::Kretprobe: return "kretprobe";
    case Attach::KprobeMulti: return "kprobe.multi";
    case Attach::KretprobeMulti: return "kretprobe.multi";
    case Attach::TpBtf: return "tp_btf";
    case Attach::Tracepoint: return "tracepoint";
    case Attach::Uprobe: return "uprobe";
    case Attach::Uretprobe: return "uretprobe";
    case Attach::PerfEvent: return "perf_event";
  }
  return "?";
}

Feature featureOf(Attach attach) {
  switch (attach) {
    case Attach::Fentry:
    case Attach::Fexit: return Feature::Trampoline;
    case Attach::Kprobe:
    case Attach::Kretprobe: return Feature::Kprobe;
    case Attach::KprobeMulti:
    case Attach::KretprobeMulti: return Feature::KprobeMulti;
    case Attach::TpBtf: return Feature::TpBtf;
    case Attach::Tracepoint: return Feature::Tracepoint;
    case Attach::Uprobe:
    case Attach::Uretprobe: return Feature::Uprobe;
    case Attach::PerfEvent: return Feature::PerfEvent;
  }
  return Feature::Tracepoint;
}

LoadedObject::~LoadedObject() {
  for (bpf_link* link : links_) bpf_link__destroy(link);
  if (object_) bpf_object__close(object_);
}

int LoadedObject::mapFd(const std::string& name) const {
  if (name.empty()) return -1;
  bpf_map* map = bpf_object__find_map_by_name(object_, name.c_str());
  return map ? bpf_map__fd(map) : -1;
}

namespace {

bool exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/// Why a method cannot work, in the kernel's terms, from an errno.
std::string explain(Attach attach, int err, bool at_load) {
  err = std::abs(err);
  bool multi = attach == Attach::KprobeMulti || attach == Attach::KretprobeMulti;
  bool kprobe = attach == Attach::Kprobe || attach == Attach::Kretprobe || multi;
  if (kprobe && !exists("/sys/bus/event_source/devices/kprobe")) {
    return "this kernel has no kprobe support (no `kprobe` perf event source: CONFIG_KPROBES "
           "or CONFIG_KPROBE_EVENTS is off)";
  }
  if (multi && (err == EOPNOTSUPP || err == ENOTSUP || err == ESRCH)) {
    return fmt::format("this kernel cannot attach kprobe.multi programs ({}: it was built "
                       "without CONFIG_FPROBE)",
                       std::strerror(err));
  }

  bool tracing = attach == Attach::Fentry || attach == Attach::Fexit || attach == Attach::TpBtf;
  std::string what = at_load ? "loading" : "attaching";
  if (tracing && (err == EPERM || err == EACCES)) {
    return fmt::format("the kernel refused {} a {} program ({}); this kernel does not allow "
                       "BPF trampolines here",
                       what, attachName(attach), std::strerror(err));
  }
  if (tracing && err == ENOTSUP) {
    return fmt::format("this kernel cannot attach {} programs ({})", attachName(attach),
                       std::strerror(err));
  }
  if (err == ENOENT && !at_load) return "the kernel has no such attach point (ENOENT)";
  return fmt::format("{} failed: {}", what, std::strerror(err));
}

/// The verifier's own conclusion and the instruction it stopped at, from a load log.
std::optional<VerifierRejection> parseVerifierLog(const std::string& log) {
  size_t begin = log.find("-- BEGIN PROG LOAD LOG --");
  if (begin == std::string::npos) return std::nullopt;
  size_t end = log.find("-- END PROG LOAD LOG --", begin);
  std::string body = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  VerifierRejection r;
  r.log = body;
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < body.size()) {
    size_t nl = body.find('\n', at);
    lines.push_back(body.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  static const std::regex insn(R"(^(\d+): \([0-9a-f]{2}\))");
  int last_insn = -1;
  size_t last_insn_line = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_search(lines[i], m, insn)) {
      last_insn = std::stoi(m[1]);
      last_insn_line = i;
    }
  }
  r.instruction = last_insn;
  // The verifier's message follows the last instruction it looked at.
  for (size_t i = last_insn_line + 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty() || l.rfind("processed ", 0) == 0 || l.rfind("--", 0) == 0 || l[0] == ';') continue;
    if (l.find("R") == 0 && l.find("=") != std::string::npos && l.find(' ') == std::string::npos) continue;
    r.message += (r.message.empty() ? "" : "\n") + l;
  }
  if (r.message.empty() && !lines.empty()) r.message = lines.back();
  static const std::regex prog(R"(prog '([^']+)': )");
  std::smatch m;
  std::string before = log.substr(0, begin);
  for (auto it = std::sregex_iterator(before.begin(), before.end(), prog); it != std::sregex_iterator(); ++it) {
    r.program = (*it)[1];
  }
  return r;
}

}  // namespace

class Loader {
 public:
  Loader(const std::vector<char>& elf, const ProgramPlan& plan, const LoadOptions& options)
      : elf_(elf), plan_(plan), options_(options) {
    for (const PlannedProgram& p : plan.programs) {
      uint32_t& methods = methods_[p.group];
      methods = std::max(methods, p.method + 1);
    }
    chosen_.assign(plan.group_names.size(), 0);
    reasons_.resize(plan.group_names.size());
    // --attach: each group of kernel-function programs uses that method only.
    if (!options.method.empty()) {
      for (const PlannedProgram& p : plan.programs) {
        bool kprobe = p.attach == Attach::Kprobe || p.attach == Attach::Kretprobe ||
                      p.attach == Attach::KprobeMulti || p.attach == Attach::KretprobeMulti;
        bool fentry = p.attach == Attach::Fentry || p.attach == Attach::Fexit;
        if (options.method == "kprobe" && kprobe) {
          // The first kprobe method of the group; later ones stay as fallbacks.
          if (chosen_[p.group] == 0 || p.method < chosen_[p.group]) chosen_[p.group] = p.method;
        }
        if (options.method == "fentry" && fentry) methods_[p.group] = p.method + 1;
      }
    }
    // A test hook: make one kind of attachment fail, to exercise the fallback on kernels
    // where it would succeed (tests/vm).
    if (const char* fail = std::getenv("KQ_TEST_FAIL_ATTACH")) forced_failure_ = fail;
  }

  LoadResult run() {
    // Each failure moves one group to its next method, so this ends.
    for (int attempt = 0; attempt < 16; ++attempt) {
      std::unique_ptr<LoadedObject> loaded(new LoadedObject());
      std::optional<LoadFailure> failure;
      int failed_group = -1;
      if (!tryOnce(*loaded, failure, failed_group)) {
        if (failed_group >= 0 && chosen_[failed_group] + 1 < methods_[failed_group]) {
          ++chosen_[failed_group];
          continue;
        }
        if (failed_group >= 0 && !reasons_[failed_group].empty()) {
          failure = LoadFailure{summarize(failed_group), failure ? failure->verifier : std::nullopt};
        }
        return LoadResult{nullptr, failure};
      }
      for (size_t g = 0; g < chosen_.size(); ++g) {
        if (chosen_[g] > 0) {
          std::string used = methodName(static_cast<uint32_t>(g), chosen_[g]);
          loaded->notes_.push_back(fmt::format("{}: attached with {}; {}", plan_.group_names[g], used,
                                               join(reasons_[g])));
        }
      }
      return LoadResult{std::move(loaded), std::nullopt};
    }
    return LoadResult{nullptr, LoadFailure{"kq could not settle on attach methods"}};
  }

 private:
  std::string methodName(uint32_t group, uint32_t method) const {
    for (const PlannedProgram& p : plan_.programs) {
      if (p.group == group && p.method == method) return attachName(p.attach);
    }
    return "?";
  }

  static std::string join(const std::vector<std::string>& reasons) {
    std::string out;
    for (const std::string& r : reasons) out += (out.empty() ? "" : "; ") + r;
    return out;
  }

  std::string summarize(int group) const {
    std::string out = fmt::format("cannot attach to {}:", plan_.group_names[group]);
    for (const std::string& r : reasons_[group]) out += "\n  " + r;
    return out;
  }

  const PlannedProgram* plannedByName(const std::string& name) const {
    for (const PlannedProgram& p : plan_.programs) {
      if (p.function == name) return &p;
    }
    return nullptr;
  }

  bool tryOnce(LoadedObject& loaded, std::optional<LoadFailure>& failure, int& failed_group) {
    LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "kq");
    loaded.object_ = bpf_object__open_mem(elf_.data(), elf_.size(), &opts);
    if (!loaded.object_) {
      failure = LoadFailure{fmt::format("libbpf cannot open the compiled object: {}",
                                        std::strerror(errno))};
      return false;
    }
    bpf_program* prog;
    bpf_object__for_each_program(prog, loaded.object_) {
      const PlannedProgram* p = plannedByName(bpf_program__name(prog));
      bool load = p && p->method == chosen_[p->group];
      bpf_program__set_autoload(prog, load);
      if (load && options_.verifier_log) {
        constexpr size_t kLogBytes = 4 << 20;
        loaded.log_buffers_.emplace_back(new char[kLogBytes]());
        bpf_program__set_log_buf(prog, loaded.log_buffers_.back().get(), kLogBytes);
        bpf_program__set_log_level(prog, 1 | 2 | 4);
      }
    }
    {
      LibbpfCapture capture;
      int err = bpf_object__load(loaded.object_);
      if (err) {
        auto rejection = parseVerifierLog(capture.text());
        const PlannedProgram* culprit = rejection ? plannedByName(rejection->program) : nullptr;
        if (!culprit) {
          // The log may name the program outside a verifier log ("prog 'x': failed to ...").
          static const std::regex prog(R"(prog '([^']+)')");
          std::smatch m;
          if (std::regex_search(capture.text(), m, prog)) culprit = plannedByName(m[1]);
        }
        if (culprit) {
          failed_group = static_cast<int>(culprit->group);
          bool verifier = rejection && rejection->instruction >= 0 && std::abs(err) == EACCES;
          reasons_[culprit->group].push_back(fmt::format(
              "{}: {}", attachName(culprit->attach),
              verifier ? "rejected by the verifier: " + rejection->message
                       : explain(culprit->attach, err, true)));
          if (rejection) {
            bpf_program* p = bpf_object__find_program_by_name(loaded.object_, culprit->function.c_str());
            if (p) rejection->section = bpf_program__section_name(p);
          }
        }
        failure = LoadFailure{fmt::format("the kernel did not load the program: {}",
                                          std::strerror(std::abs(err))),
                              rejection};
        return false;
      }
    }
    bpf_object__for_each_program(prog, loaded.object_) {
      if (!bpf_program__autoload(prog)) continue;
      if (options_.verifier_log) {
        const char* log = bpf_program__log_buf(prog, nullptr);
        loaded.logs_.emplace_back(bpf_program__name(prog), log ? log : "");
      }
      const PlannedProgram* p = plannedByName(bpf_program__name(prog));
      if (!p) continue;
      bool forced = !forced_failure_.empty() && forced_failure_ == attachName(p->attach);
      if (p->attach == Attach::PerfEvent) {
        if (!attachPerfEvents(loaded, prog, *p, failure)) return false;
        continue;
      }
      if (!forced && p->attach == Attach::Kprobe && !p->symbols.empty()) {
        // One program at many kprobes (packet mode without kprobe.multi): functions that
        // refuse a kprobe are skipped, and said with -v.
        size_t failed = 0;
        for (const std::string& symbol : p->symbols) {
          bpf_link* link = bpf_program__attach_kprobe(prog, false, symbol.c_str());
          if (link) {
            loaded.links_.push_back(link);
          } else {
            ++failed;
          }
        }
        if (failed == p->symbols.size()) {
          int err = errno;
          failed_group = static_cast<int>(p->group);
          reasons_[p->group].push_back(fmt::format("kprobe: {}", explain(p->attach, err, false)));
          failure = LoadFailure{"cannot attach kprobes"};
          return false;
        }
        if (failed) {
          loaded.notes_.push_back(fmt::format("{}: {} of {} functions refused a kprobe",
                                              plan_.group_names[p->group], failed, p->symbols.size()));
        }
        continue;
      }
      bpf_link* link = forced ? nullptr : attach(prog, *p);
      if (!link) {
        int err = forced ? EPERM : errno;
        if (forced) {
          failed_group = static_cast<int>(p->group);
          reasons_[p->group].push_back(fmt::format("{}: failed on purpose (KQ_TEST_FAIL_ATTACH)",
                                                   attachName(p->attach)));
          failure = LoadFailure{"attach failed on purpose"};
          return false;
        }
        failed_group = static_cast<int>(p->group);
        reasons_[p->group].push_back(
            fmt::format("{}: {}", attachName(p->attach), explain(p->attach, err, false)));
        failure = LoadFailure{fmt::format("cannot attach {} {}: {}", attachName(p->attach),
                                          p->target, std::strerror(err))};
        return false;
      }
      loaded.links_.push_back(link);
    }
    return true;
  }

  /// A CPU-clock perf event (on CPU 0 for `interval`, on every CPU for `profile`), each with
  /// the program attached; the link owns the event.
  static bool attachPerfEvents(LoadedObject& loaded, bpf_program* prog, const PlannedProgram& p,
                               std::optional<LoadFailure>& failure) {
    int cpus = p.frequency_hz ? libbpf_num_possible_cpus() : 1;
    int attached = 0;
    for (int cpu = 0; cpu < cpus; ++cpu) {
      perf_event_attr attr{};
      attr.type = PERF_TYPE_SOFTWARE;
      attr.size = sizeof attr;
      attr.config = PERF_COUNT_SW_CPU_CLOCK;
      if (p.frequency_hz) {
        attr.freq = 1;
        attr.sample_freq = p.frequency_hz;
      } else {
        attr.sample_period = p.period_ns;
      }
      int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        if (errno == ENODEV) continue;  // a possible CPU that is not online
        failure = LoadFailure{fmt::format("cannot open a CPU clock perf event on CPU {}: {}", cpu,
                                          std::strerror(errno))};
        return false;
      }
      bpf_link* link = bpf_program__attach_perf_event(prog, fd);
      if (!link) {
        int err = errno;
        close(fd);
        failure = LoadFailure{fmt::format("cannot attach to a perf event: {}", std::strerror(err))};
        return false;
      }
      loaded.links_.push_back(link);
      ++attached;
    }
    if (attached == 0) {
      failure = LoadFailure{"no CPU is online to sample"};
      return false;
    }
    return true;
  }

  static bpf_link* attach(bpf_program* prog, const PlannedProgram& p) {
    switch (p.attach) {
      case Attach::Kprobe:
      case Attach::Kretprobe:
        return bpf_program__attach_kprobe(prog, p.attach == Attach::Kretprobe, p.target.c_str());
      case Attach::KprobeMulti:
      case Attach::KretprobeMulti: {
        std::vector<const char*> syms;
        for (const std::string& s : p.symbols) syms.push_back(s.c_str());
        LIBBPF_OPTS(bpf_kprobe_multi_opts, opts, .syms = syms.data(), .cnt = syms.size(),
                    .retprobe = p.attach == Attach::KretprobeMulti);
        return bpf_program__attach_kprobe_multi_opts(prog, nullptr, &opts);
      }
      case Attach::Uprobe:
      case Attach::Uretprobe: {
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = p.attach == Attach::Uretprobe,
                    .func_name = p.target.c_str());
        return bpf_program__attach_uprobe_opts(prog, -1, p.binary.c_str(), 0, &opts);
      }
      default:
        return bpf_program__attach(prog);
    }
  }

  const std::vector<char>& elf_;
  const ProgramPlan& plan_;
  const LoadOptions& options_;
  std::map<uint32_t, uint32_t> methods_;
  std::vector<uint32_t> chosen_;
  std::vector<std::vector<std::string>> reasons_;
  std::string forced_failure_;
};

LoadResult loadAndAttach(const std::vector<char>& elf, const ProgramPlan& plan,
                         const LoadOptions& options) {
  return Loader(elf, plan, options).run();
}

}  // namespace kq::runtime
