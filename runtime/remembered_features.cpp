#include "runtime/remembered_features.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "host/cache_directory.h"

namespace kq::runtime {
namespace {

// The first line of the file; a kq whose probes mean something else changes it.
constexpr const char* kHeader = "kq kernel features 1";

std::string keyOf(Helper helper, HelperUse use) {
  return fmt::format("helper {} in {}", helper == Helper::FuncIp ? "bpf_get_func_ip" : "bpf_get_attach_cookie",
                     use == HelperUse::Kprobe ? "kprobe" : "fentry");
}

}  // namespace

RememberedFeatures::RememberedFeatures(std::unique_ptr<KernelFeatures> probed, std::filesystem::path file)
    : probed_(std::move(probed)), file_(std::move(file)), boot_(host::bootId()) {
  if (file_.empty() || boot_.empty() || !host::ownCacheFile(file_)) return;
  std::ifstream in(file_);
  std::string header, boot, line;
  if (!std::getline(in, header) || header != kHeader || !std::getline(in, boot) || boot != "boot " + boot_) return;
  while (std::getline(in, line)) present_.insert(line);
}

std::optional<std::string> RememberedFeatures::missing(plan::Feature feature) {
  std::string key = std::string("feature ") + featureName(feature);
  if (present_.count(key)) return std::nullopt;
  return remembered(key, probed_->missing(feature));
}

std::optional<std::string> RememberedFeatures::missing(Helper helper, HelperUse use) {
  std::string key = keyOf(helper, use);
  if (present_.count(key)) return std::nullopt;
  return remembered(key, probed_->missing(helper, use));
}

std::optional<std::string> RememberedFeatures::remembered(const std::string& key, std::optional<std::string> why) {
  if (why || file_.empty() || boot_.empty()) return why;
  present_.insert(key);
  std::string text = fmt::format("{}\nboot {}\n", kHeader, boot_);
  for (const std::string& k : present_) text += k + "\n";
  host::writeCacheFile(file_, text);
  return why;
}

std::filesystem::path featureCacheFile() {
  if (const char* off = std::getenv("KQ_NO_FEATURE_CACHE"); off && *off) return {};
  std::filesystem::path dir = host::cacheDirectory();
  return dir.empty() ? dir : dir / "kernel-features";
}

}  // namespace kq::runtime
