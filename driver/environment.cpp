#include "driver/environment.h"

#include <fmt/format.h>

namespace kq::driver {

Result<KernelEnvironment> loadKernelEnvironment(const std::string& btf_path) {
  KernelEnvironment env;
  if (btf_path.empty()) {
    auto btf = btf::Btf::loadRunningKernel();
    if (!btf) {
      return Error{btf.error().message +
                   "\n  (kq needs a kernel built with CONFIG_DEBUG_INFO_BTF; `--btf FILE` checks "
                   "against a BTF file instead)"};
    }
    env.btf = btf.take();
    env.kernel = host::systemKernel();
    return env;
  }
  auto btf = btf::Btf::loadFile(btf_path);
  if (!btf) return btf.error();
  env.btf = btf.take();
  env.kernel = host::unknownKernel(
      "checking against a BTF file, not the running kernel");
  return env;
}

}  // namespace kq::driver
