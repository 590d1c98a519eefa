// What `kq --version` says: kq's version, the commit it was built from, and the LLVM and
// libbpf it was built with (libbpf's as loaded).
#pragma once

#include <string>

namespace kq::driver {

std::string versionText();

}  // namespace kq::driver
