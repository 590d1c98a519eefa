// What the running kernel offers, remembered for the rest of its boot: a probe that attaches
// a tracepoint's perf event costs a start an RCU grace period as it detaches (about 40 ms),
// and the answer cannot change until the machine boots again.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "runtime/kernel_features.h"

namespace kq::runtime {

/// `probed`, except that what it found present before in this boot (kept in `file`, with
/// the boot's id) is not probed again. Only what is present is kept: a kernel that refused
/// something may accept it once a module loads or tracefs is mounted.
class RememberedFeatures : public KernelFeatures {
 public:
  RememberedFeatures(std::unique_ptr<KernelFeatures> probed, std::filesystem::path file);
  std::optional<std::string> missing(plan::Feature feature) override;
  std::optional<std::string> missing(Helper helper, HelperUse use) override;
  void lendVmlinux(const host::BtfView* vmlinux) override { probed_->lendVmlinux(vmlinux); }

 private:
  std::optional<std::string> remembered(const std::string& key, std::optional<std::string> why);

  std::unique_ptr<KernelFeatures> probed_;
  std::filesystem::path file_;
  std::string boot_;
  std::set<std::string> present_;
};

/// Where `RememberedFeatures` keeps its answers: $XDG_CACHE_HOME/kq/kernel-features (or
/// ~/.cache/kq/...); empty when neither is set or KQ_NO_FEATURE_CACHE is.
std::filesystem::path featureCacheFile();

}  // namespace kq::runtime
