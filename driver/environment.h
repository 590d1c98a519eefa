// The kernel a command looks at: its BTF and the facts tracefs and sysfs give. Either the
// running kernel, or (with --btf FILE) another kernel's BTF alone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "compiler/btf/btf.h"
#include "compiler/diag/result.h"
#include "host/kernel_info.h"
#include "plan/program_plan.h"

namespace kq::driver {

struct KernelEnvironment {
  std::unique_ptr<btf::Btf> btf;
  std::unique_ptr<host::KernelInfo> kernel;
};

/// The running kernel when `btf_path` is empty, else the BTF in that file.
Result<KernelEnvironment> loadKernelEnvironment(const std::string& btf_path);

/// runtime::LoadOptions::vmlinux_attach_id from `btf`, the running kernel's BTF, which the
/// object was compiled against; it is read until the load's `vmlinux_done`.
std::function<uint32_t(plan::Attach, const std::string&)> vmlinuxAttachIds(const btf::Btf& btf);

}  // namespace kq::driver
