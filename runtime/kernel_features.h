// What the running kernel lets kq load and attach, found by loading and attaching tiny
// programs once per process (the REPL asks for every query; the answers do not change).
// Behind an interface so the choice of attach methods (attach_methods.h) is tested with a
// fake kernel.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "plan/program_plan.h"

struct btf;
namespace kq::host {
class BtfView;
}

namespace kq::runtime {

/// BPF helpers that some programs call and not every kernel or program type allows.
enum class Helper : uint8_t {
  FuncIp,         // bpf_get_func_ip
  AttachCookie,   // bpf_get_attach_cookie
};
/// The program families a helper is probed in.
enum class HelperUse : uint8_t { Kprobe, Fentry };

class KernelFeatures {
 public:
  virtual ~KernelFeatures() = default;
  /// Nothing when the kernel offers `feature`; otherwise why not, in the kernel's terms
  /// ("this kernel has no kprobe support (...)").
  virtual std::optional<std::string> missing(plan::Feature feature) = 0;
  /// The same for a helper called from programs of one family.
  virtual std::optional<std::string> missing(Helper helper, HelperUse use) = 0;
  /// Until called again with null, probes may read `vmlinux` (the caller's parse of this
  /// kernel's BTF) instead of parsing their own (see VmlinuxLoan).
  virtual void lendVmlinux(const host::BtfView* vmlinux) {}
};

/// The running kernel, probed on first use of each feature and remembered by the object
/// (the engine's Host keeps one for as long as it lives), and what it offers for the rest
/// of its boot (remembered_features.h).
std::unique_ptr<KernelFeatures> probeRunningKernel();

/// While it lives, `features`' probes take the type ids they need (a function to try
/// fentry on, a BTF-typed tracepoint) from `vmlinux`, the caller's own parse of this
/// kernel's BTF, instead of parsing /sys/kernel/btf/vmlinux again (6 MiB and 3 ms).
class VmlinuxLoan {
 public:
  VmlinuxLoan(KernelFeatures& features, const host::BtfView* vmlinux) : features_(features) {
    features_.lendVmlinux(vmlinux);
  }
  ~VmlinuxLoan() { features_.lendVmlinux(nullptr); }
  VmlinuxLoan(const VmlinuxLoan&) = delete;
  VmlinuxLoan& operator=(const VmlinuxLoan&) = delete;

 private:
  KernelFeatures& features_;
};

/// `features`, except that the attach kind named `attach` ("fentry", "kprobe": the
/// KQ_TEST_FAIL_ATTACH test hook) is missing; `features` when `attach` is empty.
class WithoutAttach : public KernelFeatures {
 public:
  WithoutAttach(KernelFeatures& features, std::string attach)
      : features_(features), attach_(std::move(attach)) {}
  std::optional<std::string> missing(plan::Feature feature) override;
  std::optional<std::string> missing(Helper helper, HelperUse use) override {
    return features_.missing(helper, use);
  }
  void lendVmlinux(const host::BtfView* vmlinux) override { features_.lendVmlinux(vmlinux); }

 private:
  KernelFeatures& features_;
  std::string attach_;
};

const char* featureName(plan::Feature feature);

}  // namespace kq::runtime
