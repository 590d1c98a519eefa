// System call numbers of the architecture kq is built for (which is the one it traces),
// from the C library's <sys/syscall.h> at build time, and for x86-64 the calls newer than
// it and the events named after the kernel's function (`newuname` is `uname`, 63): the
// raw_syscalls tracepoints give a system call by number, where syscalls:sys_enter_<name>
// give it by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kq::host {

/// The number of the system call whose tracefs events are sys_enter_`name` and
/// sys_exit_`name` (`read`: 0 on x86-64), when kq knows it for this architecture.
std::optional<uint32_t> syscallNumber(std::string_view name);

}  // namespace kq::host
