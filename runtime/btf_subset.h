// The few kernel types a recording's typed dumps need, out of the kernel's 100,000: a raw BTF
// of the types asked for and of what printing them reads (their members' types, all the way
// down), where a struct or union reached through a pointer is kept by name only (a forward
// declaration: a dump prints a pointer as its cast and address, never what it points to).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/diag/result.h"
#include "runtime/kernel_types.h"

namespace kq::runtime {

struct BtfSubset {
  std::string raw;            // a whole BTF (header, types, strings): btf__new() reads it
  std::vector<uint32_t> ids;  // each root's id in it, in the order given
};

/// `roots` may come from several of the kernel's BTF objects (vmlinux, a module's).
Result<BtfSubset> btfSubset(const std::vector<KernelType>& roots);

}  // namespace kq::runtime
