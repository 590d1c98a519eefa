// Fuzz target: a script through parse and sema (`kq check`) against the fake kernel.
// Any input must end in diagnostics or success: never a crash, a hang or an exception.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "tools/kq/cli.h"
#include "tests/support/fake_kernel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string script(reinterpret_cast<const char*>(data), size);
  std::ostringstream output;
  kq::driver::Io io{output, output,
                 [&](const std::string&, std::string&) -> std::optional<std::string> { return script; },
                 false,
                 [](const std::string&) -> kq::Result<kq::driver::KernelEnvironment> {
                   return kq::driver::KernelEnvironment{kq::testing::fakeBtf(),
                                                     kq::testing::fakeKernelInfo()};
                 }};
  int status = kq::cli::run({"check", "fuzz.kq"}, io);
  if (status != 0 && status != 1) __builtin_trap();  // 2 is a usage error: not from a script
  if (output.str().find("internal error") != std::string::npos) __builtin_trap();
  return 0;
}
