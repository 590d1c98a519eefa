// A small kernel for tests: BTF built in memory with libbpf (btf__new_empty + btf__add_*)
// holding the types and functions the tests use, and kernel facts (tracepoints, formats,
// traceable functions) to match. Compiler tests run against it anywhere, without root.
#pragma once

#include <memory>
#include <string>

#include "compiler/btf/btf.h"
#include "host/kernel_info.h"

namespace kq::testing {

/// The fake kernel's BTF.
std::unique_ptr<btf::Btf> fakeBtf();

/// The fake kernel's facts: tracepoints net, skb, sched and syscalls; every BTF function
/// is in available_filter_functions except `inlined_helper`; no kprobes.
std::unique_ptr<host::KernelInfo> fakeKernelInfo();

/// Writes the fake BTF as a raw BTF file (what /sys/kernel/btf/vmlinux holds) to `path`.
void writeFakeBtf(const std::string& path);

}  // namespace kq::testing
