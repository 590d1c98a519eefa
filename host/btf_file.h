// Reading the kernel's BTF (/sys/kernel/btf/vmlinux, a module's split BTF) for both phases,
// without holding two copies of it: libbpf's btf__parse reads the file into a buffer and
// copies that into the btf it returns, so vmlinux's 5.5 MiB take 11 MiB while it parses.
// Mapped instead (sysfs maps the kernel's own BTF since Linux 6.16), the file's pages are
// the kernel's, not kq's memory: only the copy is.
#pragma once

#include <string>

struct btf;

namespace kq::host {

/// The raw BTF in `path`, split on `base` when given (a module's, read by libbpf: small);
/// null with errno set when it cannot be read or is not BTF.
::btf* readKernelBtf(const std::string& path, ::btf* base = nullptr);

}  // namespace kq::host
