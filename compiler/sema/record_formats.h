// Classic tracepoint records where tracefs cannot be read (`kq check --btf FILE`, a check
// without root): a syscall's from kq's table of Linux's system calls (syscall_args.inc,
// made by scripts/gen-syscall-args), any other event's from BTF's `struct
// trace_event_raw_<event>` (or its DEFINE_EVENT template's), which the kernel lays its
// record out as. A running kernel's tracefs, where it can be read, is always preferred.
#pragma once

#include <optional>
#include <string_view>

#include "compiler/btf/btf.h"
#include "host/kernel_info.h"

namespace kq::sema {

/// `sys_enter_NAME`'s record (`__syscall_nr`, then the arguments) or `sys_exit_NAME`'s
/// (`__syscall_nr`, `ret`), for a system call the table has.
std::optional<host::TracepointFormat> syscallRecordFormat(std::string_view event);

/// Whether the table names system call `name`'s arguments.
bool syscallInTable(std::string_view name);

/// Event `event`'s record as BTF declares it.
std::optional<host::TracepointFormat> recordFormatFromBtf(const btf::Btf& btf, std::string_view event);

}  // namespace kq::sema
