// A recording's Types block: the kernel types its layouts' typed dumps and enumerators
// name (runtime/btf_subset.h), as raw BTF, then each field's type spelling and vmlinux id
// with the id of its type there. A replay prints dumps with these, never the machine's BTF.
#pragma once

#include <memory>
#include <string>

#include "compiler/diag/result.h"
#include "plan/event_layout.h"
#include "runtime/kernel_types.h"
#include "runtime/type_dump.h"

namespace kq::record {

/// The types `dumper` finds for the Record and Enum fields of `layout`.
Result<std::string> encodeRecordedTypes(const plan::ProgramLayout& layout, runtime::TypeDumper& dumper);
/// The types a Types block holds; an error when it is malformed.
Result<std::unique_ptr<runtime::KernelTypes>> decodeRecordedTypes(const std::string& block);

}  // namespace kq::record
