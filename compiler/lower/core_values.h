// CO-RE relocations that are values rather than addresses: what libbpf patches at load time
// into an instruction's immediate, so an object compiled here is right on another kernel.
// Each is one of LLVM's BPF intrinsics, built the way clang builds them for
// `__builtin_preserve_field_info`, `bpf_core_type_size` and `bpf_core_enum_value`.
#pragma once

#include <cstdint>
#include <string_view>

#include "compiler/btf/btf.h"
#include "compiler/lower/core_types.h"

namespace kq::lower {

/// What `fieldInfo` asks of a member (libbpf's `enum bpf_field_info_kind`).
enum class FieldInfo : uint64_t {
  ByteOffset = 0,  // from the start of the access chain's root
  ByteSize = 1,    // the bytes to read for a bitfield: 1, 2, 4 or 8
  Signed = 3,
  LShiftU64 = 4,   // after reading ByteSize bytes into a u64: shift left by this,
  RShiftU64 = 5,   // then right by this
};

/// The root of a chain of `preserve.*.access.index` calls ending at `field`: the address
/// that `FieldInfo::ByteOffset` counts from.
llvm::Value* accessChainRoot(llvm::Value* field);

/// `kind` of the member that `field` (the last call of an access chain) reaches, as an i64.
llvm::Value* fieldInfo(llvm::IRBuilder<>& b, llvm::Value* field, FieldInfo kind);

/// The size of a struct or union on the kernel the program runs on, as an i64; null for
/// an anonymous one, which a relocation cannot name.
llvm::Value* typeSize(llvm::IRBuilder<>& b, CoreTypes& core, btf::BtfType record);

/// The value of enumerator `name` of `enum_type` on the kernel the program runs on, as an
/// i64 (`value` is this kernel's); a constant for an anonymous enum.
llvm::Value* enumValue(llvm::IRBuilder<>& b, CoreTypes& core, btf::BtfType enum_type,
                       std::string_view name, int64_t value);

}  // namespace kq::lower
