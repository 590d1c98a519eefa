// ipftrace2's C extensions (`kq build --ipft ext.c`): the header `ipft --gen
// bpf-module-header` prints, which extensions `#include "ipft.h"`, in kq's own copy.
#pragma once

#include <string>

#include "compiler/diag/result.h"

namespace kq::c {

/// What `ipft --gen bpf-module-header` prints (ipftrace2's src/script_bpf.c).
extern const char* const kIpftModuleHeader;

/// A directory holding `ipft.h` (under $XDG_CACHE_HOME/kq), for `-idirafter`.
Result<std::string> ipftIncludeDirectory();

}  // namespace kq::c
