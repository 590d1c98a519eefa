// Debug-info and IR types for CO-RE member accesses. A member access becomes LLVM's
// `preserve.{struct,union}.access.index` on a record type described in debug info with the
// kernel's member names, which libbpf relocates against the running kernel's BTF at load.
//
// Records get a per-compilation suffix (`sk_buff___kq3`; libbpf ignores `___` suffixes):
// LLVM's BPF CO-RE pass keeps a process-wide map keyed by type names that would otherwise
// hand a second compilation a global of the first (see ../shared/reference/llvm-bpf-notes.md).
#pragma once

#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/btf/btf.h"
#include "compiler/lower/bpf_module.h"

namespace kq::lower {

/// A member reached by name through anonymous members (btf.h), for what lowering reads that
/// no kq expression names (`struct pt_regs` registers).
using BtfMemberPath = btf::MemberSteps;
inline std::optional<BtfMemberPath> findBtfMember(btf::BtfType record, std::string_view name) {
  return btf::findMemberSteps(record, name);
}

class CoreTypes {
 public:
  explicit CoreTypes(BpfModule& module);

  /// A struct or union (resolved BTF type) as LLVM and debug-info types.
  struct Record {
    llvm::StructType* ir = nullptr;
    llvm::DICompositeType* di = nullptr;
    bool is_union = false;
    /// BTF member index -> (IR element index, DI element index). The IR index is -1 for
    /// bitfields and overlapping members: the IR struct holds only byte arrays that do not
    /// overlap, and they are reached with `storageUnit` as the access's IR type instead.
    std::vector<std::pair<int, int>> index;
  };
  const Record& record(btf::BtfType type);

  /// An IR type of `bytes` alignment (1, 2, 4 or 8) for an access to a member the record's
  /// IR struct does not lay out. LLVM offsets CO-RE accesses by the debug info; the IR type
  /// only gives a bitfield's storage unit (how `preserve.field.info` computes its defaults).
  llvm::StructType* storageUnit(uint32_t bytes);
  /// An enum as debug info, named with this compilation's suffix (see above): the type an
  /// ENUMVAL relocation names. Null for an anonymous enum, which libbpf cannot match.
  llvm::DICompositeType* relocatableEnum(btf::BtfType type);
  /// A sequence number for CO-RE value intrinsics, which LLVM would otherwise merge.
  uint32_t nextSequence() { return sequence_++; }

 private:
  llvm::DIType* memberDi(btf::BtfType type);
  llvm::DICompositeType* enumDi(btf::BtfType type, const std::string& name);
  llvm::DICompositeType* placeholder(btf::BtfType record);
  std::string suffixed(std::string_view name) const;

  BpfModule& module_;
  uint32_t compile_id_;
  uint32_t sequence_ = 0;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, Record> records_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, llvm::DICompositeType*> placeholders_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, llvm::DIType*> others_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, llvm::DICompositeType*> enums_;
};

}  // namespace kq::lower
