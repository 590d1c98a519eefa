// The standard library: kq modules from stdlib/*.kq, compiled into the binary.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace kq::sema {

struct StdlibModule {
  std::string_view name;  // `net` for stdlib/net.kq
  std::string_view text;
};

/// Every stdlib module, in name order (generated at build time from stdlib/).
const std::vector<StdlibModule>& stdlibModules();

}  // namespace kq::sema
