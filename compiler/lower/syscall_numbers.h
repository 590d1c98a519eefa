// System call numbers of the architecture kq is built for (which is the one it traces),
// from the C library's <sys/syscall.h> at build time: the raw_syscalls tracepoints give a
// system call by number, where syscalls:sys_enter_<name> give it by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kq::lower {

/// The number of the system call whose tracefs events are sys_enter_`name` and
/// sys_exit_`name`, when the ABI has one by that name (`read`: 0 on x86-64). A few events
/// are named after the kernel's function, not the call (`newuname` is `uname`): those
/// have none here.
std::optional<uint32_t> syscallNumber(std::string_view name);

}  // namespace kq::lower
