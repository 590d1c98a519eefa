// Debug-info and IR types for CO-RE member accesses. A member access becomes LLVM's
// `preserve.{struct,union}.access.index` on a record type described in debug info with the
// kernel's member names, which libbpf relocates against the running kernel's BTF at load.
//
// Records get a per-compilation suffix (`sk_buff___kq3`; libbpf ignores `___` suffixes):
// LLVM's BPF CO-RE pass keeps a process-wide map keyed by type names that would otherwise
// hand a second compilation a global of the first (see ../shared/reference/llvm-bpf-notes.md).
#pragma once

#include <map>
#include <vector>

#include "compiler/btf/btf.h"
#include "compiler/lower/bpf_module.h"

namespace kq::lower {

class CoreTypes {
 public:
  explicit CoreTypes(BpfModule& module);

  /// A struct or union (resolved BTF type) as LLVM and debug-info types.
  struct Record {
    llvm::StructType* ir = nullptr;
    llvm::DICompositeType* di = nullptr;
    bool is_union = false;
    /// BTF member index -> (IR element index, DI element index); -1 for bitfields.
    std::vector<std::pair<int, int>> index;
  };
  const Record& record(btf::BtfType type);

 private:
  llvm::DIType* memberDi(btf::BtfType type);
  llvm::DICompositeType* placeholder(btf::BtfType record);
  std::string suffixed(std::string_view name) const;

  BpfModule& module_;
  uint32_t compile_id_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, Record> records_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, llvm::DICompositeType*> placeholders_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, llvm::DIType*> others_;
};

}  // namespace kq::lower
