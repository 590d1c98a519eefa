// Where a uprobe's or USDT probe's binary is when named as bpftrace lets one name it: a
// path (`./app`, `/usr/lib/x86_64-linux-gnu/libc.so.6`) is itself; a bare name is a shared
// library on the dynamic linker's search path (`libc`, `libc.so.6`, `c`, as
// `uprobe:libc:malloc`), else a program on PATH (`bash`).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kq::host {

/// The file `name` names, or nothing when no library or program has that name.
std::optional<std::string> findBinary(const std::string& name);

/// The directories searched for shared libraries, in order: those of /etc/ld.so.conf (and
/// the files it includes), then the multiarch and default ones.
std::vector<std::string> librarySearchPath();

}  // namespace kq::host
