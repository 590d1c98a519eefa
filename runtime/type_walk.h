// The one walk of a kernel value's bytes by its BTF type, which both typed dumps (C text and
// JSON, runtime/type_dump.cpp) print from: each member, in order, as blocks (structs, unions,
// arrays) and leaves (numbers, pointers, enumerators, char arrays), up to the bytes that
// were captured.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

struct btf;
namespace kq::host {
class BtfView;
}

namespace kq::runtime {

/// Where a value sits in its parent.
struct DumpMember {
  std::string_view name;  // empty: an anonymous struct or union member, or an array element
  uint32_t type = 0;      // as declared (typedefs kept), for a dump's cast
  bool element = false;   // an array's element
};

enum class BlockKind { Struct, Union, Array };

enum class LeafKind {
  Signed,      // `i`
  Unsigned,    // `u`
  Bool,        // `u` is 0 or 1
  Bits,        // a bitfield's bits, `u`; `typed` says how its type reads them
  Wide,        // an integer wider than 8 bytes (`bytes`, little-endian)
  Float,       // `d`
  Pointer,     // `u`
  Enumerator,  // `name`, or (none matches) the value `i`
  Chars,       // a char array: `bytes`, up to its last non-zero byte
};

struct DumpLeaf {
  LeafKind kind = LeafKind::Unsigned;
  /// Bits: the value its member's type gives the bits: Signed (`i`), Bool, Enumerator
  /// (`name`), else Unsigned (`u`). The text shows the bits, as libbpf does; JSON the value.
  LeafKind typed = LeafKind::Unsigned;
  bool zero = false;  // every bit of it is zero
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view name;
  const uint8_t* bytes = nullptr;
  size_t size = 0;
};

/// What a walk tells its printer, in the order of the members.
class DumpOutput {
 public:
  virtual ~DumpOutput() = default;
  virtual void open(const DumpMember& m, BlockKind kind) = 0;
  virtual void close() = 0;
  virtual void leaf(const DumpMember& m, const DumpLeaf& value) = 0;
  /// The walk stopped at the first member not captured whole; `bytes` of the value are
  /// past the capture. Blocks still open are closed after it.
  virtual void notCaptured(uint64_t bytes) = 0;
};

/// Walks type `id` of `btf` over `bytes`, of which the first `captured` were read from the
/// kernel. Members without a name that are not structs or unions (padding bitfields) and
/// members of no size (`u8 mark[0]`) are not walked.
void walkValue(const host::BtfView* btf, uint32_t id, const uint8_t* bytes, size_t captured, DumpOutput& out);

}  // namespace kq::runtime
