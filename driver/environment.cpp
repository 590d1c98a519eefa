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

std::function<uint32_t(plan::Attach, const std::string&)> vmlinuxAttachIds(const btf::Btf& btf) {
  return [&btf](plan::Attach attach, const std::string& target) -> uint32_t {
    // As the kernel names them: a tracepoint by its `btf_trace_` typedef, a function by itself.
    std::optional<btf::BtfType> found;
    if (attach == plan::Attach::TpBtf) {
      found = btf.findTypedef("btf_trace_" + target);
    } else if (std::optional<btf::Function> fn = btf.findFunction(target)) {
      found = fn->func;
    }
    return found && found->file == &btf.vmlinux() ? found->id : 0;
  };
}

}  // namespace kq::driver
