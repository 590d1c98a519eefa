#include "runtime/kernel_features.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "host/owned_fd.h"
#include "runtime/remembered_features.h"

namespace kq::runtime {

const char* featureName(plan::Feature feature) {
  switch (feature) {
    case plan::Feature::Trampoline: return "fentry/fexit";
    case plan::Feature::TpBtf: return "tp_btf";
    case plan::Feature::Kprobe: return "kprobe";
    case plan::Feature::KprobeMulti: return "kprobe.multi";
    case plan::Feature::Tracepoint: return "tracepoint";
    case plan::Feature::Uprobe: return "uprobe";
    case plan::Feature::PerfEvent: return "perf_event";
    case plan::Feature::RunOnce: return "raw_tp test run";
    case plan::Feature::Iter: return "BPF iterators";
  }
  return "?";
}

std::optional<std::string> WithoutAttach::missing(plan::Feature feature) {
  for (plan::Attach a : {plan::Attach::Fentry, plan::Attach::Fexit, plan::Attach::Kprobe, plan::Attach::Kretprobe,
                   plan::Attach::KprobeMulti, plan::Attach::KretprobeMulti, plan::Attach::TpBtf,
                   plan::Attach::Tracepoint, plan::Attach::Uprobe, plan::Attach::Uretprobe, plan::Attach::PerfEvent, plan::Attach::Begin, plan::Attach::End, plan::Attach::Iter}) {
    if (attach_ == plan::attachName(a) && plan::featureOf(a) == feature) {
      return std::string("failed on purpose (KQ_TEST_FAIL_ATTACH)");
    }
  }
  return features_.missing(feature);
}

namespace {


using host::OwnedFd;

constexpr bpf_insn kReturnZero[] = {
    {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},
    {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
};

/// A program that calls `helper`, then returns 0.
std::vector<bpf_insn> callingHelper(int helper) {
  return {{BPF_JMP | BPF_CALL, 0, 0, 0, helper}, kReturnZero[0], kReturnZero[1]};
}

/// The probe program's file descriptor, or -errno.
int loadProgram(bpf_prog_type type, bpf_attach_type attach, uint32_t btf_id,
                const std::vector<bpf_insn>& insns) {
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach,
              .attach_btf_id = btf_id);
  int fd = bpf_prog_load(type, "feature_probe", "GPL", insns.data(), insns.size(), &opts);
  return fd >= 0 ? fd : -errno;
}

/// Program types that take no expected attach type.
constexpr bpf_attach_type kAnyAttach = static_cast<bpf_attach_type>(0);

const std::vector<bpf_insn> kTrivial(std::begin(kReturnZero), std::end(kReturnZero));

std::string refused(const char* what, const char* kind, int err) {
  return fmt::format("the kernel refused {} a {} program ({})", what, kind,
                     std::strerror(std::abs(err)));
}

std::string perfEventSource(const char* name) {
  return fmt::format("/sys/bus/event_source/devices/{}", name);
}

int perfEventType(const char* source) {
  std::ifstream in(perfEventSource(source) + "/type");
  int type = -1;
  in >> type;
  return in ? type : -1;
}

/// A perf event on CPU 0 for every process; its file descriptor, or -errno.
int perfEventOpen(perf_event_attr& attr) {
  attr.size = sizeof attr;
  int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
  return fd >= 0 ? fd : -errno;
}

class RunningKernel : public KernelFeatures {
 public:
  std::optional<std::string> missing(plan::Feature feature) override {
    auto it = features_.find(feature);
    if (it == features_.end()) it = features_.emplace(feature, probe(feature)).first;
    return it->second;
  }

  void lendVmlinux(const host::BtfView* vmlinux) override { lent_ = vmlinux; }

  std::optional<std::string> missing(Helper helper, HelperUse use) override {
    auto key = std::make_pair(helper, use);
    auto it = helpers_.find(key);
    if (it == helpers_.end()) it = helpers_.emplace(key, probe(helper, use)).first;
    return it->second;
  }

 private:
  std::optional<std::string> probe(plan::Feature feature) {
    switch (feature) {
      case plan::Feature::Trampoline: return probeTrampoline();
      case plan::Feature::TpBtf: return probeTpBtf();
      case plan::Feature::Kprobe: return probeKprobe();
      case plan::Feature::KprobeMulti: return probeKprobeMulti();
      case plan::Feature::Tracepoint: return probeTracepoint();
      case plan::Feature::Uprobe: return probeUprobe();
      case plan::Feature::PerfEvent: return probePerfEvent();
      case plan::Feature::RunOnce: return probeRunOnce();
      case plan::Feature::Iter: return probeIter();
    }
    return std::nullopt;
  }

  /// vmlinux BTF: the caller's (VmlinuxLoan), else read once.
  const host::BtfView* vmlinux() {
    if (lent_) return lent_;
    if (!vmlinux_loaded_) {
      vmlinux_loaded_ = true;
      auto read = host::BtfView::readFile("/sys/kernel/btf/vmlinux");
      if (read) vmlinux_ = read.take();
    }
    return vmlinux_.get();
  }

  /// A kernel function every kernel has, to attach probes to: its name and BTF id.
  std::optional<std::pair<const char*, uint32_t>> probeFunction() {
    const host::BtfView* btf = vmlinux();
    if (!btf) return std::nullopt;
    for (const char* name : {"bpf_fentry_test1", "do_unlinkat", "vfs_read"}) {
      int id = btf->findByNameKind(name, BTF_KIND_FUNC);
      if (id > 0) return std::make_pair(name, static_cast<uint32_t>(id));
    }
    return std::nullopt;
  }

  std::optional<std::string> probeTrampoline() {
    auto function = probeFunction();
    if (!function) return "kq found no kernel function in vmlinux BTF to try an fentry program on";
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, function->second, kTrivial));
    if (prog.fd < 0) return refused("loading", "fentry", prog.fd) + trampolineHint(prog.fd);
    OwnedFd link(bpf_link_create(prog.fd, 0, BPF_TRACE_FENTRY, nullptr));
    if (link.fd < 0) {
      int err = -errno;
      return fmt::format("{} to {}{}", refused("attaching", "fentry", err), function->first,
                         trampolineHint(err));
    }
    return std::nullopt;
  }

  static std::string trampolineHint(int err) {
    err = std::abs(err);
    if (err == EPERM || err == EACCES) return "; this kernel does not allow BPF trampolines here";
    if (err == ENOTSUP || err == EINVAL) return "; it has no BPF trampolines for this architecture";
    return "";
  }

  std::optional<std::string> probeTpBtf() {
    const host::BtfView* btf = vmlinux();
    if (!btf) return "this kernel has no BTF (/sys/kernel/btf/vmlinux)";
    int id = btf->findByNameKind("btf_trace_sched_process_exec", BTF_KIND_TYPEDEF);
    if (id <= 0) return "kq found no BTF-typed tracepoint in vmlinux BTF";
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, id, kTrivial));
    if (prog.fd < 0) return refused("loading", "tp_btf", prog.fd);
    OwnedFd link(bpf_link_create(prog.fd, 0, BPF_TRACE_RAW_TP, nullptr));
    if (link.fd < 0) return refused("attaching", "tp_btf", -errno);
    return std::nullopt;
  }

  std::optional<std::string> probeKprobe() {
    int type = perfEventType("kprobe");
    if (type < 0) {
      return std::string("this kernel has no kprobe support (no `kprobe` perf event source: "
                         "CONFIG_KPROBES or CONFIG_KPROBE_EVENTS is off)");
    }
    auto function = probeFunction();
    if (!function) return "kq found no kernel function to try a kprobe on";
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_KPROBE, kAnyAttach, 0, kTrivial));
    if (prog.fd < 0) return refused("loading", "kprobe", prog.fd);
    perf_event_attr attr{};
    attr.type = static_cast<uint32_t>(type);
    attr.config1 = reinterpret_cast<uint64_t>(function->first);
    OwnedFd event(perfEventOpen(attr));
    if (event.fd < 0) {
      return fmt::format("the kernel refused a kprobe on {} ({})", function->first,
                         std::strerror(-event.fd));
    }
    OwnedFd link(bpf_link_create(prog.fd, event.fd, BPF_PERF_EVENT, nullptr));
    if (link.fd < 0) return refused("attaching", "kprobe", -errno);
    return std::nullopt;
  }

  std::optional<std::string> probeKprobeMulti() {
    auto function = probeFunction();
    if (!function) return "kq found no kernel function to try a kprobe.multi program on";
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_KPROBE, BPF_TRACE_KPROBE_MULTI, 0, kTrivial));
    if (prog.fd < 0) return refused("loading", "kprobe.multi", prog.fd);
    const char* syms[] = {function->first};
    LIBBPF_OPTS(bpf_link_create_opts, opts);
    opts.kprobe_multi.syms = syms;
    opts.kprobe_multi.cnt = 1;
    OwnedFd link(bpf_link_create(prog.fd, 0, BPF_TRACE_KPROBE_MULTI, &opts));
    if (link.fd < 0) {
      int err = errno;
      if (err == EOPNOTSUPP || err == ENOTSUP || err == ESRCH) {
        return fmt::format("this kernel cannot attach kprobe.multi programs ({}: it was built "
                           "without CONFIG_FPROBE)",
                           std::strerror(err));
      }
      return refused("attaching", "kprobe.multi", -err);
    }
    return std::nullopt;
  }

  std::optional<std::string> probeTracepoint() {
    int id = -1;
    for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
      std::ifstream in(std::string(root) + "/events/sched/sched_process_exec/id");
      if (in >> id) break;
      id = -1;
    }
    if (id < 0) return "tracefs is not mounted (kq mounts it at /sys/kernel/tracing as root)";
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_TRACEPOINT, kAnyAttach, 0, kTrivial));
    if (prog.fd < 0) return refused("loading", "tracepoint", prog.fd);
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.config = static_cast<uint64_t>(id);
    OwnedFd event(perfEventOpen(attr));
    if (event.fd < 0) return fmt::format("the kernel refused a tracepoint perf event ({})",
                                         std::strerror(-event.fd));
    OwnedFd link(bpf_link_create(prog.fd, event.fd, BPF_PERF_EVENT, nullptr));
    if (link.fd < 0) return refused("attaching", "tracepoint", -errno);
    return std::nullopt;
  }

  std::optional<std::string> probeUprobe() {
    if (perfEventType("uprobe") < 0) {
      return std::string("this kernel has no uprobe support (no `uprobe` perf event source: "
                         "CONFIG_UPROBE_EVENTS is off)");
    }
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_KPROBE, kAnyAttach, 0, kTrivial));
    if (prog.fd < 0) return refused("loading", "uprobe", prog.fd);
    return std::nullopt;
  }

  /// `iter:`: a tracing program of BPF_TRACE_ITER on the task iterator.
  std::optional<std::string> probeIter() {
    const host::BtfView* btf = vmlinux();
    if (!btf) return std::string("kq cannot read the kernel's BTF, which names the iterators");
    int id = btf->findByNameKind("bpf_iter_task", BTF_KIND_FUNC);
    if (id <= 0) return std::string("the kernel has no task iterator (bpf_iter_task, Linux 5.8)");
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_TRACING, BPF_TRACE_ITER, static_cast<uint32_t>(id), kTrivial));
    if (prog.fd < 0) return refused("loading", "BPF iterator (tracing)", prog.fd);
    return std::nullopt;
  }

  /// `begin` and `end`: a raw_tp program, attached to nothing, run once by the session.
  std::optional<std::string> probeRunOnce() {
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_RAW_TRACEPOINT, kAnyAttach, 0, kTrivial));
    if (prog.fd < 0) return refused("loading", "raw_tp", prog.fd);
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    if (bpf_prog_test_run_opts(prog.fd, &opts) != 0) {
      return fmt::format("the kernel cannot run a raw_tp program on request ({}; BPF_PROG_TEST_RUN of "
                         "raw_tp needs Linux 5.10)", std::strerror(errno));
    }
    return std::nullopt;
  }

  std::optional<std::string> probePerfEvent() {
    OwnedFd prog(loadProgram(BPF_PROG_TYPE_PERF_EVENT, kAnyAttach, 0, kTrivial));
    if (prog.fd < 0) return refused("loading", "perf_event", prog.fd);
    perf_event_attr attr{};
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = 1'000'000'000;
    attr.disabled = 1;
    OwnedFd event(perfEventOpen(attr));
    if (event.fd < 0) return fmt::format("the kernel refused a CPU clock perf event ({})",
                                         std::strerror(-event.fd));
    OwnedFd link(bpf_link_create(prog.fd, event.fd, BPF_PERF_EVENT, nullptr));
    if (link.fd < 0) return refused("attaching", "perf_event", -errno);
    return std::nullopt;
  }

  std::optional<std::string> probe(Helper helper, HelperUse use) {
    int id = helper == Helper::FuncIp ? BPF_FUNC_get_func_ip : BPF_FUNC_get_attach_cookie;
    const char* name = helper == Helper::FuncIp ? "bpf_get_func_ip" : "bpf_get_attach_cookie";
    int fd;
    if (use == HelperUse::Kprobe) {
      fd = loadProgram(BPF_PROG_TYPE_KPROBE, kAnyAttach, 0, callingHelper(id));
    } else {
      auto function = probeFunction();
      if (!function) return "kq found no kernel function to try an fentry program on";
      fd = loadProgram(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, function->second,
                       callingHelper(id));
    }
    OwnedFd prog(fd);
    if (prog.fd < 0) {
      return fmt::format("the kernel refused a {} program calling {} ({})",
                         use == HelperUse::Kprobe ? "kprobe" : "fentry", name,
                         std::strerror(-prog.fd));
    }
    return std::nullopt;
  }

  bool vmlinux_loaded_ = false;
  std::unique_ptr<host::BtfView> vmlinux_;
  const host::BtfView* lent_ = nullptr;  // the caller's vmlinux BTF while a VmlinuxLoan lives
  std::map<plan::Feature, std::optional<std::string>> features_;
  std::map<std::pair<Helper, HelperUse>, std::optional<std::string>> helpers_;
};

}  // namespace

std::unique_ptr<KernelFeatures> probeRunningKernel() {
  return std::make_unique<RememberedFeatures>(std::make_unique<RunningKernel>(), featureCacheFile());
}

}  // namespace kq::runtime
