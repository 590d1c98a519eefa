// kq's types: what every expression evaluates to. Kernel types come from BTF (with their
// typedef names kept for display); kq adds its own scalars, strings and an error type that
// silences follow-on errors once one has been reported.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/btf/btf.h"

namespace kq::sema {

enum class TypeKind : uint8_t {
  Error,    // already reported; compatible with everything
  Void,
  Bool,
  Int,
  Enum,
  Pointer,
  Struct,
  Union,
  Array,
  String,   // kq strings: literals, str(), comm
  Function, // a function pointer's target
  Table,    // a lookup table (`{0: "CAP_CHOWN"}`), usable only by indexing it
};

struct Type {
  TypeKind kind = TypeKind::Error;
  /// How the type is written: `struct sk_buff *`, `__u32`, `unsigned int`, `string`.
  std::string spelling;
  /// Int, Enum, Bool: size in bytes and signedness. Int: whether it is a C `char`.
  uint32_t size = 0;
  bool is_signed = false;
  bool is_char = false;
  /// Pointer: the pointee. Array: the element.
  const Type* element = nullptr;
  /// Array: number of elements.
  uint32_t count = 0;
  /// Struct, Union, Enum, Array: the BTF type (resolved: no typedefs).
  btf::BtfType btf;
  /// Struct, Union: only forward-declared in BTF, so its members are unknown.
  bool incomplete = false;

  bool isError() const { return kind == TypeKind::Error; }
  bool isInteger() const { return kind == TypeKind::Int || kind == TypeKind::Enum || kind == TypeKind::Bool; }
  bool isPointer() const { return kind == TypeKind::Pointer; }
  bool isRecord() const { return kind == TypeKind::Struct || kind == TypeKind::Union; }
  /// Something kq can compare with a string literal: a string, a char array or char pointer.
  bool isStringLike() const;
  /// Pointer to a struct or union.
  bool isRecordPointer() const { return isPointer() && element->isRecord(); }
};

/// A member found in a struct or union, possibly inside anonymous members.
struct MemberPath {
  /// The members to walk through, outermost first: anonymous unions/structs, then the
  /// member itself. Each is (record type, member index in BTF).
  std::vector<std::pair<btf::BtfType, uint32_t>> steps;
  const Type* type = nullptr;
  uint64_t bit_offset = 0;  // from the start of the outer record
  uint32_t bitfield_bits = 0;  // 0 when not a bitfield
};

/// Owns every Type of a compilation and builds them from BTF on demand (memoized).
class TypeTable {
 public:
  TypeTable();

  const Type* error() const { return error_; }
  const Type* voidType() const { return void_; }
  const Type* boolType() const { return bool_; }
  const Type* string() const { return string_; }
  const Type* u64() const { return u64_; }
  const Type* s64() const { return s64_; }
  const Type* u32() const { return u32_; }
  const Type* s32() const { return s32_; }
  /// A lookup table: `{integer: string}` names numbers, `{string: integer}` numbers names.
  const Type* table(bool string_keys) const { return string_keys ? numbers_table_ : names_table_; }
  /// An integer of `size` bytes; spelled like the kernel's u8..s64 unless `spelling` says.
  const Type* integer(uint32_t size, bool is_signed, std::string spelling = "");
  const Type* pointerTo(const Type* pointee);
  /// `count` elements of `element` with no BTF type of their own: an array field of a
  /// classic tracepoint's record (`unsigned long args[6]`, `__u8 saddr[4]`).
  const Type* arrayOf(const Type* element, uint32_t count);

  /// The kq type of a BTF type (typedef names kept as spelling).
  const Type* fromBtf(btf::BtfType type);

  /// A member of a struct or union type (looking through anonymous members).
  std::optional<MemberPath> findMember(const Type* record, std::string_view name);
  /// Every member name reachable from `record` (for did-you-mean hints).
  std::vector<std::string> memberNames(const Type* record);

 private:
  const Type* add(Type type);

  std::deque<Type> types_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, const Type*> from_btf_;
  std::map<const Type*, const Type*> pointers_;
  std::map<std::pair<const Type*, uint32_t>, const Type*> arrays_;
  std::map<std::string, const Type*> integers_;
  const Type* error_;
  const Type* void_;
  const Type* bool_;
  const Type* string_;
  const Type* u64_;
  const Type* s64_;
  const Type* u32_;
  const Type* s32_;
  const Type* names_table_;
  const Type* numbers_table_;
};

/// Whether `a` and `b` are one type (pointers to one type, records of one layout).
bool sameType(const Type* a, const Type* b);

/// Edit distance between two names, for `did you mean` hints.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `name`, if it is close enough to be a likely typo.
std::optional<std::string> closestName(std::string_view name,
                                       const std::vector<std::string_view>& candidates);

}  // namespace kq::sema
