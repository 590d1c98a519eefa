#include "runtime/loader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "host/elf_file.h"
#include "host/owned_fd.h"
#include "plan/live_site.h"
#include "runtime/attach_methods.h"
#include "runtime/libbpf_log.h"
#include "runtime/link_reaper.h"
#include "runtime/map_warmup.h"
#include "runtime/own_btf_load.h"
#include "runtime/verifier_log.h"

namespace kq::runtime {

using host::OwnedFd;


namespace {

/// The queries whose end detaches a program's links (once all have ended): none for one
/// serving the whole session.
std::vector<uint32_t> linkQueries(const plan::PlannedProgram& p) {
  return p.whole_session ? std::vector<uint32_t>{} : p.queries;
}

}  // namespace

/// Waits until every BPF program that started before now has returned (an RCU grace
/// period: the kernel runs them in RCU read-side sections), so that one taken out of its
/// slot writes nothing more.
static void waitForRunningPrograms() {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) usleep(50 * 1000);
}

void LoadedObject::release(std::vector<Link> links) const {
  bool emptied = false;
  std::vector<bpf_link*> detach;
  for (Link& l : links) {
    if (l.slots_fd >= 0) {
      bpf_map_delete_elem(l.slots_fd, &l.slot);
      emptied = true;
      if (l.link) {
        // A site this job attached: its keeper holds the attachment for the other jobs'
        // slots. Only this process's descriptor goes (libbpf would disable a perf event).
        bpf_link__disconnect(l.link);
        close(bpf_link__fd(l.link));
        bpf_link__destroy(l.link);
      }
    } else if (defer_detach_ && l.stoppable && stops_.present()) {
      // Its queries' words set (a query's end set its own; a dry run's or a failed load's
      // end, here), it does nothing more.
      for (uint32_t query : l.queries) stops_.set(query);
      keepForReaper(l.link);
    } else {
      detach.push_back(l.link);
    }
  }
  if (emptied) waitForRunningPrograms();
  detachLinks(std::move(detach));
  for (const Link& l : links) {
    if (l.slots_fd >= 0 && sites_) sites_->leaving(l.slots_fd, l.slot);
  }
}

LoadedObject::~LoadedObject() {
  release(std::move(links_));
  for (RunOnce& r : run_once_) {
    if (r.link) bpf_link__destroy(r.link);
  }
  if (object_) bpf_object__close(object_);
}

bool LoadedObject::Link::serves(uint32_t query) const {
  return std::find(queries.begin(), queries.end(), query) != queries.end();
}

void LoadedObject::detach(uint32_t query) {
  // A program shared with queries still running skips this query's part from now on; one
  // whose queries have all ended is detached.
  ended_.insert(query);
  stops_.set(query);
  auto ends = std::stable_partition(links_.begin(), links_.end(), [&](const Link& l) {
    return l.queries.empty() || !std::all_of(l.queries.begin(), l.queries.end(),
                                             [&](uint32_t q) { return ended_.count(q) > 0; });
  });
  std::vector<Link> ended(std::make_move_iterator(ends), std::make_move_iterator(links_.end()));
  links_.erase(ends, links_.end());
  release(std::move(ended));
}

void LoadedObject::detachAll() {
  // Every word set: the programs left to the reaper do nothing from here.
  if (defer_detach_) stops_.setAll();
  release(std::move(links_));
  links_.clear();
}

bool LoadedObject::onlyRunsAtStart() const {
  return links_.empty() && !run_once_.empty() &&
         std::all_of(run_once_.begin(), run_once_.end(), [](const RunOnce& r) {
           return r.attach == plan::Attach::Begin || r.attach == plan::Attach::Iter;
         });
}

std::optional<std::string> LoadedObject::runOnce(plan::Attach which) {
  if (!ran_.insert(which).second) return std::nullopt;
  for (const RunOnce& r : run_once_) {
    if (r.attach != which) continue;
    bool ended = !r.queries.empty() && std::all_of(r.queries.begin(), r.queries.end(),
                                                   [&](uint32_t q) { return ended_.count(q) != 0; });
    if (ended) continue;
    if (which == plan::Attach::Iter) {
      // Reading the iterator runs the program for each object; it prints nothing itself.
      int fd = bpf_iter_create(r.fd);
      if (fd < 0) return fmt::format("cannot start an iterator: {}", std::strerror(errno));
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) {
      }
      int err = errno;
      close(fd);
      if (n < 0) return fmt::format("reading an iterator failed: {}", std::strerror(err));
      continue;
    }
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    if (bpf_prog_test_run_opts(r.fd, &opts) != 0) {
      return fmt::format("cannot run the `{}` program: {}", plan::attachName(which), std::strerror(errno));
    }
  }
  return std::nullopt;
}

size_t LoadedObject::attachedLinks(uint32_t query) const {
  return static_cast<size_t>(std::count_if(links_.begin(), links_.end(),
                                           [&](const Link& l) { return l.serves(query); }));
}

std::string LoadedObject::attachedText(uint32_t group) const {
  auto it = places_.find(group);
  if (it == places_.end()) return "nothing";
  const Places& p = it->second;
  bool functions = p.attach != plan::Attach::TpBtf && p.attach != plan::Attach::Tracepoint;
  std::string count = std::to_string(p.count);
  for (int at = static_cast<int>(count.size()) - 3; at > 0; at -= 3) count.insert(at, ",");
  std::string out = fmt::format("{} {}{} through {}", count, functions ? "function" : "tracepoint",
                                p.count == 1 ? "" : "s", plan::attachName(p.attach));
  // A few tracepoints (a narrowed `packet(...)` fallen back to them): which.
  if (!functions && !p.tracepoints.empty() && p.tracepoints.size() <= 8) {
    std::string names;
    for (const std::string& t : p.tracepoints) names += (names.empty() ? "" : ", ") + t;
    out += " (" + names + ")";
  }
  return out;
}

std::vector<std::string> LoadedObject::readyLines(const plan::ProgramPlan& plan) const {
  std::vector<std::string> out;
  for (uint32_t group : plan.packet_groups) {
    // `packet (2,361 functions)` names what could be traced; what was is said after.
    std::string name = group < plan.group_names.size() ? plan.group_names[group] : "packet";
    name = name.substr(0, name.find(" ("));
    std::string line = fmt::format("{}: ready, {}", name, attachedText(group));
    // Its XDP and TC programs, traced or not.
    size_t i = out.size();
    int32_t programs = i < plan.packet_program_groups.size() ? plan.packet_program_groups[i] : -1;
    auto places = programs < 0 ? places_.end() : places_.find(static_cast<uint32_t>(programs));
    if (places != places_.end()) {
      const Places& p = places->second;
      std::string names;
      for (const std::string& t : p.tracepoints) names += (names.empty() ? "" : ", ") + t;
      line += fmt::format(", and {} XDP/TC program{} through {} ({})", p.count, p.count == 1 ? "" : "s",
                          plan::attachName(p.attach), names);
    } else if (auto why = programs < 0 ? left_out_.end() : left_out_.find(static_cast<uint32_t>(programs));
               why != left_out_.end()) {
      line += fmt::format("; the XDP and TC programs loaded are not traced ({})", why->second);
    }
    // nft_do_chain's verdicts, likewise.
    int32_t netfilter = i < plan.packet_netfilter_groups.size() ? plan.packet_netfilter_groups[i] : -1;
    if (netfilter >= 0 && places_.count(static_cast<uint32_t>(netfilter))) {
      line += fmt::format(", and netfilter's verdicts through {}", plan::attachName(places_.at(static_cast<uint32_t>(netfilter)).attach));
    } else if (auto why = netfilter < 0 ? left_out_.end() : left_out_.find(static_cast<uint32_t>(netfilter));
               why != left_out_.end()) {
      line += fmt::format("; netfilter's verdicts are not traced ({})", why->second);
    }
    out.push_back(std::move(line));
  }
  return out;
}

int LoadedObject::mapFd(const std::string& name) const {
  if (name.empty()) return -1;
  bpf_map* map = bpf_object__find_map_by_name(object_, name.c_str());
  return map ? bpf_map__fd(map) : -1;
}

std::vector<int> LoadedObject::programFds() const {
  std::vector<int> fds;
  bpf_program* prog;
  bpf_object__for_each_program(prog, object_) {
    if (bpf_program__autoload(prog) && bpf_program__fd(prog) >= 0) fds.push_back(bpf_program__fd(prog));
  }
  return fds;
}

namespace {

bool exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/// Why a method cannot work, in the kernel's terms, from an errno.
std::string explain(plan::Attach attach, int err, bool at_load) {
  err = std::abs(err);
  bool multi = attach == plan::Attach::KprobeMulti || attach == plan::Attach::KretprobeMulti;
  bool kprobe = attach == plan::Attach::Kprobe || attach == plan::Attach::Kretprobe || multi;
  if (kprobe && !exists("/sys/bus/event_source/devices/kprobe")) {
    return "this kernel has no kprobe support (no `kprobe` perf event source: CONFIG_KPROBES "
           "or CONFIG_KPROBE_EVENTS is off)";
  }
  if (multi && (err == EOPNOTSUPP || err == ENOTSUP || err == ESRCH)) {
    return fmt::format("this kernel cannot attach kprobe.multi programs ({}: it was built "
                       "without CONFIG_FPROBE)",
                       std::strerror(err));
  }

  bool tracing = attach == plan::Attach::Fentry || attach == plan::Attach::Fexit || attach == plan::Attach::TpBtf;
  std::string what = at_load ? "loading" : "attaching";
  if (tracing && (err == EPERM || err == EACCES)) {
    return fmt::format("the kernel refused {} a {} program ({}); this kernel does not allow "
                       "BPF trampolines here",
                       what, plan::attachName(attach), std::strerror(err));
  }
  if (tracing && err == ENOTSUP) {
    return fmt::format("this kernel cannot attach {} programs ({})", plan::attachName(attach),
                       std::strerror(err));
  }
  if (err == ENOENT && !at_load) return "the kernel has no such attach point (ENOENT)";
  if (err == EILSEQ && kprobe) {
    return "the offset is not at the start of an instruction of the function (EILSEQ): a kprobe "
           "goes on an instruction boundary, as `objdump -d` of the function shows them";
  }
  bool uprobe = attach == plan::Attach::Uprobe || attach == plan::Attach::Uretprobe;
  if (uprobe && !at_load && (err == EPERM || err == EACCES) && geteuid() != 0) {
    // perf's uprobe events are root's: CAP_BPF and CAP_PERFMON load the program, not this.
    return fmt::format("attaching a uprobe needs CAP_SYS_ADMIN (or root); CAP_BPF and "
                       "CAP_PERFMON are not enough ({})", std::strerror(err));
  }
  if (err == EMFILE || err == ENFILE) {
    return fmt::format("{} failed: {} (each attached probe holds a file descriptor: raise "
                       "`ulimit -n`)", what, std::strerror(err));
  }
  return fmt::format("{} failed: {}", what, std::strerror(err));
}

}  // namespace

class Loader {
 public:
  /// A program of a chosen method that the kernel refused: its group moves on.
  struct Refusal {
    std::optional<uint32_t> group;
    std::string why;
  };

  Loader(const std::vector<char>& elf, const plan::ProgramPlan& plan, const LoadOptions& options,
         KernelFeatures& features)
      : elf_(options.vmlinux_attach_id ? withoutCoreRelocations(elf) : elf),
        plan_(plan),
        options_(options),
        loan_(options.vmlinux ? std::make_unique<VmlinuxLoan>(features, options.vmlinux) : nullptr),
        methods_(plan, features, options.method) {}

  /// Loads the object once with each group's first usable method; only when the kernel
  /// refuses a program of it does that group move on and the object load again (at most
  /// once per group and method).
  LoadResult run() {
    if (auto group = methods_.firstUnusable()) {
      return LoadResult{nullptr, LoadFailure{methods_.failure(*group), std::nullopt, *group, methods_.reasons(*group)}};
    }
    ownTracingSections();
    for (const plan::PlannedProgram& p : plan_.programs) {
      if (p.attach_program == 0) continue;
      in_programs_[p.function] = &p;
      in_programs_[plan::liveDispatcher(p.function)] = &p;  // at the same place
    }
    if (options_.vmlinux_attach_id) {
      for (const plan::PlannedProgram& p : plan_.programs) {
        if (p.attach_program != 0) continue;  // a function of a BPF program, not the kernel's
        if (p.attach == plan::Attach::TpBtf || p.attach == plan::Attach::Fentry || p.attach == plan::Attach::Fexit) {
          uint32_t id = options_.vmlinux_attach_id(p.attach, p.target);
          attach_ids_[p.function] = id;
          attach_ids_[plan::liveDispatcher(p.function)] = id;  // at the same place
        }
      }
    }
    // Probes after this (a group moving on) parse their own BTF.
    loan_.reset();
    if (options_.vmlinux_done) options_.vmlinux_done();
    for (;;) {
      std::unique_ptr<LoadedObject> loaded(new LoadedObject());
      Refusal refusal;
      std::optional<LoadFailure> failure = loadOnce(*loaded, refusal);
      if (!failure) {
        for (uint32_t g = 0; g < methods_.groups(); ++g) {
          loaded->notes_.insert(loaded->notes_.begin() + g, methods_.note(g));
          if (!methods_.optional(g) || methods_.chosen(g)) continue;
          std::string why;
          for (const std::string& r : methods_.reasons(g)) why += (why.empty() ? "" : "; ") + r;
          loaded->left_out_[g] = why;
        }
        return LoadResult{std::move(loaded), std::nullopt};
      }
      // Slots of live sites are an optimization: a load they fail is tried once more without.
      if (!live_.empty() && !live_off_) {
        live_off_ = true;
        continue;
      }
      if (!refusal.group) return LoadResult{nullptr, failure};
      if (!methods_.refuse(*refusal.group, refusal.why)) {
        return LoadResult{nullptr, LoadFailure{methods_.failure(*refusal.group), failure->verifier, *refusal.group,
                                               methods_.reasons(*refusal.group)}};
      }
    }
  }

 private:
  const plan::PlannedProgram* plannedByName(const std::string& name) const {
    for (const plan::PlannedProgram& p : plan_.programs) {
      if (p.function == name) return &p;
    }
    return nullptr;
  }

  bool isChosen(const plan::PlannedProgram& p) const { return methods_.chosen(p.group) == p.method; }

  /// Every CPU's entries ready for the tables' first groups (runtime/map_warmup.h).
  void warmTables(const LoadedObject& loaded) {
    std::vector<WarmedMap> maps;
    for (const plan::AggregateLayout& a : plan_.layout.aggregates) {
      if (a.single) continue;  // an array's entries are there from the start
      int fd = loaded.mapFd(a.map);
      if (fd >= 0) maps.push_back({fd, a.key_size, a.value_size, a.per_cpu});
    }
    warmMapAllocators(maps);
  }

  std::optional<LoadFailure> loadOnce(LoadedObject& loaded, Refusal& refusal) {
    LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "kq");
    loaded.object_ = bpf_object__open_mem(elf_.data(), elf_.size(), &opts);
    if (!loaded.object_) {
      return LoadFailure{fmt::format("libbpf cannot open the compiled object: {}",
                                     std::strerror(errno))};
    }
    configure(loaded);
    configureLive(loaded);
    AttachIds ids;
    std::vector<OwnedFd> targets;
    if (auto failure = giveAttachIds(loaded, ids, targets)) return failure;
    if (auto failure = load(loaded, refusal)) return failure;
    targets.clear();  // a loaded program holds its target BPF program itself
    warmTables(loaded);
    if (!plan_.stops_map.empty()) loaded.stops_ = StopWords(loaded.mapFd(plan_.stops_map), plan_.layout.queries);
    loaded.defer_detach_ = options_.defer_detach;
    if (!plan_.start_map.empty()) {
      // `elapsed` counts from here, before any program can run.
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      uint64_t ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(now.tv_nsec);
      uint32_t zero = 0;
      if (bpf_map_update_elem(loaded.mapFd(plan_.start_map), &zero, &ns, BPF_ANY) != 0) {
        return LoadFailure{fmt::format("cannot set the session's start: {}", std::strerror(errno))};
      }
    }
    return attachAll(loaded, refusal);
  }

  /// A chosen program compiled as a slot of a live site, with a keeper of sites to ask:
  /// the slot it takes in a site already attached (`free`), else it attaches one.
  struct LiveSlot {
    std::string place;
    bpf_program* dispatcher = nullptr;
    std::optional<LiveSites::FreeSlot> free;
  };

  /// Live slots: which site each takes, or that it makes one (its dispatcher loads then).
  void configureLive(LoadedObject& loaded) {
    live_.clear();
    if (!options_.sites || live_off_) return;
    std::set<std::string> places;
    for (const plan::PlannedProgram& p : plan_.programs) {
      // One slot a place an object: a second program there (another group's) attaches on
      // its own, so two never take the same free slot.
      if (!isChosen(p) || !places.insert(livePlace(p)).second) continue;
      bpf_program* dispatcher = bpf_object__find_program_by_name(loaded.object_, plan::liveDispatcher(p.function).c_str());
      bpf_map* slots = bpf_object__find_map_by_name(loaded.object_, plan::liveSlotsMap(p.function).c_str());
      if (!slots) continue;
      LiveSlot live{livePlace(p), dispatcher, options_.sites->find(livePlace(p))};
      if (live.free && bpf_map__reuse_fd(slots, live.free->slots_fd) != 0) live.free.reset();
      // Compiled without its dispatcher (LowerOptions::site_attached), a program whose slot
      // has gone since attaches on its own.
      if (!live.free && !dispatcher) continue;
      if (dispatcher) bpf_program__set_autoload(dispatcher, !live.free);
      live_.emplace(p.function, std::move(live));
    }
  }

  /// Each tracing program to load, its attach id: the one kq knows, or what libbpf finds
  /// (parsing vmlinux BTF) for one it does not.
  /// A program on a BPF program's function finds its id in that program's BTF, through a
  /// descriptor of the program (`targets` holds it until the load).
  std::optional<LoadFailure> giveAttachIds(LoadedObject& loaded, AttachIds& ids, std::vector<OwnedFd>& targets) {
    bpf_program* prog;
    bpf_object__for_each_program(prog, loaded.object_) {
      if (!bpf_program__autoload(prog) || !ownedTracingProgram(prog)) continue;
      if (auto in = in_programs_.find(bpf_program__name(prog)); in != in_programs_.end()) {
        const plan::PlannedProgram& p = *in->second;
        targets.emplace_back(bpf_prog_get_fd_by_id(p.attach_program));
        if (targets.back().fd < 0) {
          return LoadFailure{fmt::format("the BPF program `{}` (id {}) is not loaded any more: {}", p.target,
                                         p.attach_program, std::strerror(errno))};
        }
        if (int err = bpf_program__set_attach_target(prog, targets.back().fd, p.target.c_str())) {
          return LoadFailure{fmt::format("the BPF program of id {} has no function `{}` in its BTF ({}): "
                                         "was it replaced since kq looked?",
                                         p.attach_program, p.target, std::strerror(-err))};
        }
        continue;
      }
      auto known = attach_ids_.find(bpf_program__name(prog));
      if (known != attach_ids_.end() && known->second != 0) {
        ids.give(prog, known->second);
      } else {
        // Its load fails (saying so) if even libbpf cannot find it.
        const char* target = std::strchr(bpf_program__section_name(prog), '/');
        if (target) bpf_program__set_attach_target(prog, 0, target + 1);
      }
    }
    return std::nullopt;
  }

  /// Autoload only the chosen method's programs; verifier logs only when asked for.
  void configure(LoadedObject& loaded) {
    bpf_program* prog;
    bpf_object__for_each_program(prog, loaded.object_) {
      const plan::PlannedProgram* p = plannedByName(bpf_program__name(prog));
      bool load = p && isChosen(*p);
      bpf_program__set_autoload(prog, load);
      if (load && options_.verifier_log) {
        constexpr size_t kLogBytes = 4 << 20;
        loaded.log_buffers_.emplace_back(new char[kLogBytes]());
        bpf_program__set_log_buf(prog, loaded.log_buffers_.back().get(), kLogBytes);
        bpf_program__set_log_level(prog, 1 | 2 | 4);
      }
    }
  }

  std::optional<LoadFailure> load(LoadedObject& loaded, Refusal& refusal) {
    LibbpfCapture capture;
    int err = bpf_object__load(loaded.object_);
    if (!err) return std::nullopt;
    auto rejection = parseVerifierLog(capture.text());
    const plan::PlannedProgram* culprit = rejection ? plannedByName(rejection->program) : nullptr;
    if (!culprit) {
      // The log may name the program outside a verifier log ("prog 'x': failed to ...").
      if (auto name = programThatFailed(capture.text())) culprit = plannedByName(*name);
    }
    if (culprit) {
      bool verifier = rejection && rejection->instruction >= 0 && std::abs(err) == EACCES;
      refusal = Refusal{culprit->group, verifier
                                            ? "rejected by the verifier: " + rejection->message
                                            : explain(culprit->attach, err, true)};
      if (rejection) {
        bpf_program* p = bpf_object__find_program_by_name(loaded.object_, culprit->function.c_str());
        if (p) rejection->section = bpf_program__section_name(p);
      }
    }
    return LoadFailure{fmt::format("the kernel did not load the program: {}",
                                   std::strerror(std::abs(err))),
                       rejection};
  }

  std::optional<LoadFailure> attachAll(LoadedObject& loaded, Refusal& refusal) {
    bpf_program* prog;
    bpf_object__for_each_program(prog, loaded.object_) {
      if (!bpf_program__autoload(prog)) continue;
      if (options_.verifier_log) {
        size_t size = 0;
        const char* log = bpf_program__log_buf(prog, &size);
        loaded.logs_.emplace_back(bpf_program__name(prog), log ? std::string(log) : "");
      }
      const plan::PlannedProgram* p = plannedByName(bpf_program__name(prog));
      if (!p) continue;
      std::optional<LoadFailure> failure;
      size_t links_before = loaded.links_.size();
      if (auto live = live_.find(p->function); live != live_.end()) {
        attachLive(loaded, prog, *p, live->second, refusal, failure);
      } else if (p->attach == plan::Attach::Begin || p->attach == plan::Attach::End) {
        loaded.run_once_.push_back({bpf_program__fd(prog), p->attach, linkQueries(*p)});
      } else if (p->attach == plan::Attach::Iter) {
        // Attached now, read once as the session starts (LoadedObject::runOnce).
        bpf_link* link = bpf_program__attach_iter(prog, nullptr);
        if (!link) {
          int err = errno;
          refusal = Refusal{p->group, explain(p->attach, err, false)};
          failure = LoadFailure{fmt::format("cannot attach the iterator {}: {}", p->target, std::strerror(err))};
        } else {
          loaded.run_once_.push_back({bpf_link__fd(link), p->attach, linkQueries(*p), link});
        }
      } else if (p->attach == plan::Attach::PerfEvent) {
        attachPerfEvents(loaded, prog, *p, options_.process, failure);
      } else if ((p->attach == plan::Attach::Kprobe || p->attach == plan::Attach::Kretprobe) && !p->symbols.empty()) {
        attachKprobes(loaded, prog, *p, refusal, failure);
      } else if (bpf_link* link = attach(prog, *p)) {
        loaded.links_.push_back({link, linkQueries(*p), -1, 0, p->checks_stops});
      } else {
        int err = errno;
        refusal = Refusal{p->group, err == E2BIG ? tooManyPrograms(*p)
                                                 : explain(p->attach, err, false)};
        failure = LoadFailure{fmt::format("cannot attach {} {}: {}", plan::attachName(p->attach),
                                          p->target, std::strerror(err))};
      }
      if (failure) return failure;
      countPlaces(loaded, *p, links_before);
    }
    return std::nullopt;
  }

  /// A slot of a live site: in a free slot of the site already at its place (nothing is
  /// attached), or in slot 0 of a site it attaches and hands to the keeper of sites.
  void attachLive(LoadedObject& loaded, bpf_program* prog, const plan::PlannedProgram& p, const LiveSlot& live,
                  Refusal& refusal, std::optional<LoadFailure>& failure) {
    uint32_t slot = live.free ? live.free->slot : 0;
    uint32_t zero = 0;
    int held = bpf_map__fd(bpf_object__find_map_by_name(loaded.object_, plan::liveSlotMap(p.function).c_str()));
    int slots = bpf_map__fd(bpf_object__find_map_by_name(loaded.object_, plan::liveSlotsMap(p.function).c_str()));
    int fd = bpf_program__fd(prog);
    if (held < 0 || slots < 0 || bpf_map_update_elem(held, &zero, &slot, BPF_ANY) != 0) {
      failure = LoadFailure{fmt::format("cannot set up the live site of {}: {}", p.target, std::strerror(errno))};
      return;
    }
    if (live.free) options_.sites->joining(live.place, slot);
    if (bpf_map_update_elem(slots, &slot, &fd, BPF_ANY) != 0) {
      failure = LoadFailure{fmt::format("cannot put the program of {} in its site: {}", p.target, std::strerror(errno))};
      if (live.free) options_.sites->leaving(slots, slot);
      return;
    }
    loaded.sites_ = options_.sites;
    if (live.free) {
      loaded.links_.push_back({nullptr, linkQueries(p), slots, slot});
      return;
    }
    bpf_link* link = attach(live.dispatcher, p);
    if (!link) {
      int err = errno;
      refusal = Refusal{p.group, err == E2BIG ? tooManyPrograms(p) : explain(p.attach, err, false)};
      failure = LoadFailure{fmt::format("cannot attach {} {}: {}", plan::attachName(p.attach), p.target,
                                        std::strerror(err))};
      bpf_map_delete_elem(slots, &slot);
      return;
    }
    loaded.links_.push_back({link, linkQueries(p), slots, slot});
    options_.sites->made(live.place, bpf_link__fd(link), slots);
  }

  /// What a program attached to, for LoadedObject::attachedText (an optional group's
  /// programs are all at returns: each fexit names its place).
  void countPlaces(LoadedObject& loaded, const plan::PlannedProgram& p, size_t links_before) const {
    bool at_return = p.attach == plan::Attach::Fexit || p.attach == plan::Attach::Kretprobe ||
                     p.attach == plan::Attach::KretprobeMulti || p.attach == plan::Attach::Uretprobe;
    if (at_return && !methods_.optional(p.group)) return;
    size_t n = p.attach == plan::Attach::KprobeMulti ? p.symbols.size() : loaded.links_.size() - links_before;
    auto [it, added] = loaded.places_.try_emplace(p.group, LoadedObject::Places{p.attach, 0, {}});
    it->second.count += n;
    if ((p.attach == plan::Attach::TpBtf || p.attach == plan::Attach::Tracepoint || at_return) && n) {
      it->second.tracepoints.push_back(p.target);
    }
  }

  /// E2BIG from attaching: the kernel's limit of programs at one place, and this script's count.
  std::string tooManyPrograms(const plan::PlannedProgram& p) const {
    size_t here = std::count_if(plan_.programs.begin(), plan_.programs.end(),
                                [&](const plan::PlannedProgram& q) {
                                  return q.attach == p.attach && q.target == p.target;
                                });
    bool trampoline =
        p.attach == plan::Attach::Fentry || p.attach == plan::Attach::Fexit || p.attach == plan::Attach::TpBtf;
    return fmt::format(
        "the kernel attaches at most {} programs to one {} (counting other tools' programs "
        "there), and this script has {} on {}: fewer queries on it, or one query with `group by`",
        trampoline ? "38 (BPF_MAX_TRAMP_LINKS)" : "64 (BPF_TRACE_MAX_PROGS)",
        trampoline ? "function" : "tracepoint", here, p.target);
  }

  /// One program at many kprobes (packet mode without kprobe.multi), each with its cookie:
  /// functions that refuse a kprobe are skipped, and said with -v. Each kprobe costs the
  /// kernel a perf event and a registration that waits on RCU, so threads attach them side
  /// by side (measured in tests/vm: 1,600 kprobes).
  void attachKprobes(LoadedObject& loaded, bpf_program* prog, const plan::PlannedProgram& p,
                     Refusal& refusal, std::optional<LoadFailure>& failure) {
    constexpr size_t kThreads = 8;
    std::mutex lock;
    std::atomic<size_t> next{0};
    size_t failed = 0;
    int err = 0;
    auto work = [&] {
      for (size_t i = next++; i < p.symbols.size(); i = next++) {
        LIBBPF_OPTS(bpf_kprobe_opts, opts, .bpf_cookie = i < p.cookies.size() ? p.cookies[i] : 0,
                    .retprobe = p.attach == plan::Attach::Kretprobe);
        bpf_link* link = bpf_program__attach_kprobe_opts(prog, p.symbols[i].c_str(), &opts);
        int why = errno;
        std::lock_guard<std::mutex> hold(lock);
        if (link) {
          loaded.links_.push_back({link, linkQueries(p), -1, 0, p.checks_stops});
        } else {
          err = why;
          ++failed;
        }
      }
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < std::min(kThreads, p.symbols.size()); ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    if (failed == p.symbols.size()) {
      refusal = Refusal{p.group, explain(p.attach, err, false)};
      failure = LoadFailure{"cannot attach kprobes"};
    } else if (failed) {
      loaded.notes_.push_back(fmt::format("{}: {} of {} functions refused a {}",
                                          plan_.group_names[p.group], failed, p.symbols.size(),
                                          plan::attachName(p.attach)));
    }
  }

  /// Why perf_event_open refused `p`'s event, in words that name what this machine lacks.
  static std::string perfEventRefusal(const plan::PlannedProgram& p, int cpu, int err) {
    std::string event = p.perf_type == PERF_TYPE_SOFTWARE && p.perf_config == PERF_COUNT_SW_CPU_CLOCK &&
                                !p.every_cpu && !p.frequency_hz
                            ? "a CPU clock perf event"
                            : fmt::format("the perf event of {}", p.target);
    std::string out = fmt::format("cannot open {} on CPU {}: {}", event, cpu, std::strerror(err));
    if (p.perf_type == PERF_TYPE_HARDWARE && (err == ENOENT || err == ENODEV || err == EOPNOTSUPP)) {
      out += " (this machine's CPU exposes no such hardware counter to perf: a virtual machine often "
             "has none; `software:` events and `profile` count without one)";
    } else if (err == EACCES || err == EPERM) {
      out += " (perf events need root, CAP_PERFMON, or a lower kernel.perf_event_paranoid)";
    } else if (err == EINVAL && p.frequency_hz) {
      out += " (the frequency may be above kernel.perf_event_max_sample_rate)";
    }
    return out;
  }

  /// The perf event of `p` (a CPU clock on CPU 0 for `interval`; on every CPU for `profile`,
  /// `software:` and `hardware:`), each with the program attached; the link owns the event.
  static bool attachPerfEvents(LoadedObject& loaded, bpf_program* prog, const plan::PlannedProgram& p,
                               pid_t process, std::optional<LoadFailure>& failure) {
    int cpus = p.every_cpu || p.frequency_hz ? libbpf_num_possible_cpus() : 1;
    // A watchpoint at a user-space address: in the traced process, on whichever CPU it runs.
    bool in_process = p.perf_type == PERF_TYPE_BREAKPOINT && !p.every_cpu;
    if (in_process && process <= 0) {
      failure = LoadFailure{fmt::format("{} watches a user-space address: name the process with -p PID, "
                                        "or start it with -c COMMAND", p.target)};
      return false;
    }
    if (in_process) cpus = 1;
    int attached = 0;
    for (int cpu = 0; cpu < cpus; ++cpu) {
      perf_event_attr attr{};
      attr.type = p.perf_type;
      attr.size = sizeof attr;
      attr.config = p.perf_config;
      if (p.frequency_hz) {
        attr.freq = 1;
        attr.sample_freq = p.frequency_hz;
      } else {
        attr.sample_period = p.period_ns;
      }
      if (p.perf_type == PERF_TYPE_BREAKPOINT) {
        attr.bp_addr = p.bp_addr;
        attr.bp_len = p.bp_len;
        attr.bp_type = p.bp_type;
        attr.inherit = in_process;  // -c's shell forks the command
      }
      int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, in_process ? process : -1,
                                        in_process ? -1 : cpu, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        int err = errno;
        if (err == ENODEV && p.perf_type != PERF_TYPE_HARDWARE) continue;  // a possible CPU that is not online
        failure = LoadFailure{perfEventRefusal(p, cpu, err)};
        return false;
      }
      bpf_link* link = bpf_program__attach_perf_event(prog, fd);
      if (!link) {
        int err = errno;
        close(fd);
        failure = LoadFailure{fmt::format("cannot attach to a perf event: {}", std::strerror(err))};
        return false;
      }
      loaded.links_.push_back({link, linkQueries(p), -1, 0, p.checks_stops});
      ++attached;
    }
    if (attached == 0) {
      failure = LoadFailure{"no CPU is online to sample"};
      return false;
    }
    return true;
  }

  /// Where function `symbol` of `binary` starts in the file, when one address has that name.
  static std::optional<uint64_t> fileOffset(const std::string& binary, const std::string& symbol) {
    std::string error;
    std::optional<host::ElfFile> file = host::readElfFile(binary, error);
    if (!file) return std::nullopt;
    std::optional<uint64_t> address;
    for (const host::ElfSymbol& f : file->functions) {
      if (f.name != symbol) continue;
      if (address && *address != f.address) return std::nullopt;  // two functions: libbpf says so
      address = f.address;
    }
    if (!address) return std::nullopt;
    for (const host::ElfSegment& seg : file->segments) {
      if (*address >= seg.vaddr && *address < seg.vaddr + seg.filesz) {
        return *address - seg.vaddr + seg.offset;
      }
    }
    return std::nullopt;
  }

  static bpf_link* attach(bpf_program* prog, const plan::PlannedProgram& p) {
    switch (p.attach) {
      case plan::Attach::Kprobe:
      case plan::Attach::Kretprobe: {
        LIBBPF_OPTS(bpf_kprobe_opts, opts, .offset = static_cast<size_t>(p.kprobe_offset),
                    .retprobe = p.attach == plan::Attach::Kretprobe);
        return bpf_program__attach_kprobe_opts(prog, p.target.c_str(), &opts);
      }
      case plan::Attach::KprobeMulti:
      case plan::Attach::KretprobeMulti: {
        std::vector<const char*> syms;
        for (const std::string& s : p.symbols) syms.push_back(s.c_str());
        LIBBPF_OPTS(bpf_kprobe_multi_opts, opts, .syms = syms.data(),
                    .cookies = p.cookies.empty() ? nullptr : reinterpret_cast<const __u64*>(p.cookies.data()), .cnt = syms.size(),
                    .retprobe = p.attach == plan::Attach::KretprobeMulti);
        return bpf_program__attach_kprobe_multi_opts(prog, nullptr, &opts);
      }
      case plan::Attach::Uprobe:
      case plan::Attach::Uretprobe: {
        // At the symbol's file offset, found here: libbpf refuses a name that .dynsym lists
        // once per symbol version (glibc's pthread_create@GLIBC_2.2.5 and @@GLIBC_2.34),
        // even where both are one function.
        // A USDT site: its offset, and its semaphore's, which the kernel counts up while
        // the uprobe is attached (the program's `PROBE_ENABLED()` is then true).
        std::optional<uint64_t> offset = p.uprobe_offset ? p.uprobe_offset : fileOffset(p.binary, p.target);
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = p.ref_ctr_offset,
                    .retprobe = p.attach == plan::Attach::Uretprobe,
                    .func_name = offset ? nullptr : p.target.c_str());
        return bpf_program__attach_uprobe_opts(prog, -1, p.binary.c_str(), offset.value_or(0), &opts);
      }
      default:
        return bpf_program__attach(prog);
    }
  }

  const std::vector<char> elf_;  // without CO-RE relocations where they change nothing
  const plan::ProgramPlan& plan_;
  const LoadOptions& options_;
  std::unique_ptr<VmlinuxLoan> loan_;  // before methods_: the probes choosing them read it
  AttachMethods methods_;
  std::map<std::string, LiveSlot> live_;  // by program name
  std::map<std::string, uint32_t> attach_ids_;  // by program name: vmlinux_attach_id's
  /// Programs on a BPF program's function (`bpf:`), by program name (their dispatchers too).
  std::map<std::string, const plan::PlannedProgram*> in_programs_;
  bool live_off_ = false;  // a load with live slots failed: they are not tried again
};

namespace {

/// The kernel a load sees: `options.features`, or the running kernel probed now, less what
/// the KQ_TEST_FAIL_ATTACH test hook takes away (to exercise the fallback on kernels where
/// it would succeed, tests/vm).
class LoadKernel {
 public:
  explicit LoadKernel(const LoadOptions& options)
      : own_(options.features ? nullptr : probeRunningKernel()),
        features_(options.features ? *options.features : *own_, failOnPurpose()) {}
  KernelFeatures& features() { return features_; }

 private:
  static std::string failOnPurpose() {
    const char* fail = std::getenv("KQ_TEST_FAIL_ATTACH");
    return fail ? fail : "";
  }
  std::unique_ptr<KernelFeatures> own_;
  WithoutAttach features_;
};

}  // namespace

std::vector<bool> programsThisKernelMayLoad(const plan::ProgramPlan& plan, const LoadOptions& options) {
  LoadKernel kernel(options);
  std::optional<VmlinuxLoan> loan;
  if (options.vmlinux) loan.emplace(kernel.features(), options.vmlinux);
  AttachMethods methods(plan, kernel.features(), options.method);
  // A group no method can attach here fails the load before any program does: compile none.
  if (methods.firstUnusable()) return std::vector<bool>(plan.programs.size(), false);
  std::vector<bool> out(plan.programs.size(), true);
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    out[i] = methods.mayChoose(plan.programs[i].group, plan.programs[i].method);
  }
  return out;
}

LoadResult loadAndAttach(const std::vector<char>& elf, const plan::ProgramPlan& plan,
                         const LoadOptions& options) {
  LoadKernel kernel(options);
  return Loader(elf, plan, options, kernel.features()).run();
}

}  // namespace kq::runtime
