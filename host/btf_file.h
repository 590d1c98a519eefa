// One BTF blob as kq reads it, for both phases: vmlinux (/sys/kernel/btf/vmlinux), a
// module's split BTF on top of it, an object's .BTF, a recording's types. kq reads types
// and strings where they lie, with an index of where each type starts. libbpf (1.1)
// copies a blob into a buffer of its own before parsing it: for vmlinux, 6 MiB of pages
// written at every start, which cost a one-liner more than its compile. Mapped (sysfs
// maps the kernel's own BTF since Linux 6.16), vmlinux's pages are the kernel's, not kq's.
//
// The accessors answer as libbpf's of the same names do (btf__type_by_id, btf__name_by_offset,
// btf__type_cnt, btf__resolve_size, btf__resolve_type, btf__find_by_name_kind), so the
// inline helpers of <bpf/btf.h> (btf_members, btf_vlen, btf_kind, ...) read its types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diag/result.h"

struct btf;
struct btf_type;

namespace kq::host {

class BtfView {
 public:
  /// The raw BTF in `path` (split BTF on `base` when given): mapped where the file can be,
  /// read otherwise.
  static Result<std::unique_ptr<BtfView>> readFile(const std::string& path, const BtfView* base = nullptr);
  /// A copy of `bytes` (a whole raw BTF: header, types, strings).
  static Result<std::unique_ptr<BtfView>> copyOf(std::string_view bytes, const BtfView* base = nullptr);
  /// A copy of what libbpf holds: a BTF built with btf__add_*, or an ELF file's that
  /// btf__parse read (split on `base`, which must be the view of `btf`'s base).
  static Result<std::unique_ptr<BtfView>> copyOf(const ::btf* btf, const BtfView* base = nullptr);
  /// Bytes of a type's record: its common part and what its kind adds (0 for a kind kq
  /// does not know).
  static size_t recordSize(const ::btf_type* t);
  /// A BTF with no types (only `void`).
  static std::unique_ptr<BtfView> empty();

  ~BtfView();
  BtfView(const BtfView&) = delete;
  BtfView& operator=(const BtfView&) = delete;

  /// One past the last type id (btf__type_cnt): `void`, the base's types and these.
  uint32_t typeCount() const { return start_id_ + static_cast<uint32_t>(offsets_.size()); }
  /// This blob's first type id: 1, or the base's type count.
  uint32_t firstId() const { return start_id_; }
  /// The type `id` (its base's below firstId()); `void` for 0; null past the last.
  const ::btf_type* type(uint32_t id) const;
  /// The string at `offset` (its base's below its own strings); "" when out of range.
  const char* name(uint32_t offset) const;
  /// Whether `offset` is the start of a string (or within one) of this BTF or its base.
  bool hasString(uint32_t offset) const;
  const BtfView* base() const { return base_; }
  /// Bytes of the type after typedefs, qualifiers and arrays (negative errno when it has none).
  int64_t resolveSize(uint32_t id) const;
  /// The id behind typedefs, qualifiers and variables (negative errno for void or a loop).
  int32_t resolveType(uint32_t id) const;
  /// The first type of `kind` named `name`, from the base's up (-ENOENT when none is).
  int32_t findByNameKind(std::string_view name, uint32_t kind) const;
  /// The blob: header, types, strings (this file's own, not its base's).
  std::string_view bytes() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  BtfView() = default;
  /// Checks the header and indexes the types; empty or what is wrong.
  std::string parse();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmapped on destruction
  std::string owned_;        // or the bytes kept here
  const BtfView* base_ = nullptr;
  uint32_t start_id_ = 1;
  uint32_t start_str_off_ = 0;
  const uint8_t* types_ = nullptr;
  const char* strings_ = nullptr;
  uint32_t strings_size_ = 0;
  std::vector<uint32_t> offsets_;  // each own type's offset in the type section
};

}  // namespace kq::host
