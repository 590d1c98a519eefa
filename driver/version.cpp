#include "driver/version.h"

#include <bpf/libbpf.h>
#include <llvm/Config/llvm-config.h>

#include <fmt/format.h>

#include "kq_commit.h"
#include "kq_version.h"

namespace kq::driver {

std::string versionText() {
  return fmt::format("kq {} (commit {})\nLLVM {}, libbpf {}", KQ_VERSION, KQ_COMMIT, LLVM_VERSION_STRING,
                     libbpf_version_string());
}

}  // namespace kq::driver
