#include "runtime/privileges.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kq::runtime {
namespace {

// Older headers lack these (Linux 5.8 split them off CAP_SYS_ADMIN).
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

bool has(uint64_t set, int cap) { return (set >> cap) & 1; }

}  // namespace

uint64_t effectiveCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return 0;
  return data[0].effective | (static_cast<uint64_t>(data[1].effective) << 32);
}

std::vector<std::string> missingTracingCapabilities(uint64_t effective) {
  // CAP_SYS_ADMIN stands for both: so do kernels older than 5.8, which lack the others.
  if (has(effective, kCapSysAdmin)) return {};
  std::vector<std::string> missing;
  if (!has(effective, kCapBpf)) missing.push_back("CAP_BPF");
  if (!has(effective, kCapPerfmon)) missing.push_back("CAP_PERFMON");
  return missing;
}

}  // namespace kq::runtime
