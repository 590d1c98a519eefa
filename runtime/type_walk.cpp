#include "runtime/type_walk.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

#include <algorithm>
#include <cstring>

namespace kq::runtime {
namespace {

// Deeper than any kernel type: a loop in a malformed file.
constexpr int kMaxDepth = 32;

/// Type `id` behind its typedefs, qualifiers and type tags.
uint32_t resolved(const host::BtfView* btf, uint32_t id) {
  for (int depth = 0; depth < 64; ++depth) {
    const ::btf_type* t = btf->type(id);
    if (!t || !(btf_is_typedef(t) || btf_is_mod(t) || btf_is_type_tag(t))) return id;
    id = t->type;
  }
  return 0;
}

/// `size` (at most 16) bytes, little-endian, as a number.
unsigned __int128 load(const uint8_t* p, size_t size) {
  unsigned __int128 v = 0;
  for (size_t i = std::min<size_t>(size, 16); i-- > 0;) v = v << 8 | p[i];
  return v;
}

int64_t signExtended(uint64_t v, uint32_t bits) {
  if (bits == 0 || bits >= 64) return static_cast<int64_t>(v);
  uint64_t sign = 1ull << (bits - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

/// Whether `elem` is C's `char` (a text character): pahole's BTF gives the kernel's `char`
/// no BTF_INT_CHAR encoding, only its name; `unsigned char` and `u8` arrays are bytes.
bool isCharType(const host::BtfView* btf, const ::btf_type* elem) {
  if (!elem || !btf_is_int(elem) || elem->size != 1) return false;
  if (btf_int_encoding(elem) & BTF_INT_CHAR) return true;
  const char* name = btf->name(elem->name_off);
  return name && (std::strcmp(name, "char") == 0 || std::strcmp(name, "signed char") == 0);
}

class Walk {
 public:
  Walk(const host::BtfView* btf, const uint8_t* bytes, size_t captured, uint64_t full, DumpOutput& out)
      : btf_(btf), bytes_(bytes), captured_(captured), full_(full), out_(out) {}

  /// The value of type `id` at `offset` bytes into the walked one.
  void value(const DumpMember& m, uint32_t id, size_t offset, int depth) {
    if (stopped_ || depth > kMaxDepth) return;
    uint32_t rid = resolved(btf_, id);
    const ::btf_type* t = btf_->type(rid);
    int64_t size = btf_->resolveSize(rid);
    if (!t || size < 0 || (size == 0 && depth > 0)) return;
    size_t end = offset + static_cast<size_t>(size);
    if (btf_is_composite(t)) {
      if (offset >= captured_ && depth > 0) return stop();
      out_.open(m, btf_is_struct(t) ? BlockKind::Struct : BlockKind::Union);
      members(t, offset, depth);
      out_.close();
      return;
    }
    if (btf_is_array(t)) return array(m, btf_array(t), offset, end, depth);
    if (end > captured_) return stop();
    const uint8_t* p = bytes_ + offset;
    DumpLeaf v;
    switch (btf_kind(t)) {
      case BTF_KIND_INT:
        if (btf_int_offset(t) != 0 || btf_int_bits(t) != 8 * t->size) {
          return bits(m, 8 * offset + btf_int_offset(t), btf_int_bits(t));
        }
        v = integer(t, p);
        break;
      case BTF_KIND_PTR:
        v.kind = LeafKind::Pointer;
        v.u = static_cast<uint64_t>(load(p, std::min<size_t>(size, 8)));
        v.zero = v.u == 0;
        break;
      case BTF_KIND_ENUM:
      case BTF_KIND_ENUM64: v = enumerator(t, p); break;
      case BTF_KIND_FLOAT: v = floating(t, p); break;
      default: return;  // nothing a member holds
    }
    out_.leaf(m, v);
  }

 private:
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    out_.notCaptured(full_ - captured_);
  }

  void members(const ::btf_type* t, size_t offset, int depth) {
    const btf_member* list = btf_members(t);
    for (uint16_t i = 0; i < btf_vlen(t) && !stopped_; ++i) {
      const char* name = btf_->name(list[i].name_off);
      DumpMember m{name ? name : "", list[i].type, false};
      uint32_t bit = btf_member_bit_offset(t, i);
      if (uint32_t size = btf_member_bitfield_size(t, i)) {
        if (!m.name.empty()) bits(m, 8 * offset + bit, size);
        continue;
      }
      const ::btf_type* type = btf_->type(resolved(btf_, list[i].type));
      if (m.name.empty() && !(type && btf_is_composite(type))) continue;
      value(m, list[i].type, offset + bit / 8, depth + 1);
    }
  }

  void array(const DumpMember& m, const struct btf_array* a, size_t offset, size_t end, int depth) {
    const ::btf_type* elem = btf_->type(resolved(btf_, a->type));
    if (isCharType(btf_, elem)) {
      if (end > captured_) return stop();
      DumpLeaf v;
      v.kind = LeafKind::Chars;
      v.bytes = bytes_ + offset;
      v.size = end - offset;
      while (v.size > 0 && v.bytes[v.size - 1] == 0) --v.size;
      v.zero = v.size == 0;
      return out_.leaf(m, v);
    }
    if (offset >= captured_) return stop();
    int64_t elem_size = btf_->resolveSize(a->type);
    if (elem_size <= 0) return;
    out_.open(m, BlockKind::Array);
    for (uint32_t i = 0; i < a->nelems && !stopped_; ++i) {
      value({"", a->type, true}, a->type, offset + i * static_cast<size_t>(elem_size), depth + 1);
    }
    out_.close();
  }

  /// A bitfield of `size` bits, `bit` bits into the walked value.
  void bits(const DumpMember& m, size_t bit, uint32_t size) {
    size_t first = bit / 8;
    size_t count = (bit % 8 + size + 7) / 8;
    if (first + count > captured_) return stop();
    unsigned __int128 raw = load(bytes_ + first, count) >> (bit % 8);
    uint64_t mask = size >= 64 ? ~0ull : (1ull << size) - 1;
    DumpLeaf v;
    v.kind = LeafKind::Bits;
    v.u = static_cast<uint64_t>(raw) & mask;
    v.zero = v.u == 0;
    const ::btf_type* type = btf_->type(resolved(btf_, m.type));
    if (type && btf_is_int(type) && (btf_int_encoding(type) & BTF_INT_BOOL)) {
      v.typed = LeafKind::Bool;
    } else if (type && btf_is_int(type) && (btf_int_encoding(type) & BTF_INT_SIGNED)) {
      v.typed = LeafKind::Signed;
      v.i = signExtended(v.u, size);
    } else if (type && btf_is_any_enum(type)) {
      v.name = enumeratorName(type, v.u, mask);
      v.typed = !v.name.empty() ? LeafKind::Enumerator : btf_kflag(type) ? LeafKind::Signed : LeafKind::Unsigned;
      v.i = signExtended(v.u, size);
    }
    out_.leaf(m, v);
  }

  DumpLeaf integer(const ::btf_type* t, const uint8_t* p) const {
    DumpLeaf v;
    if (t->size > 8) {
      v.kind = LeafKind::Wide;
      v.bytes = p;
      v.size = t->size;
      v.zero = std::all_of(p, p + t->size, [](uint8_t b) { return b == 0; });
      return v;
    }
    v.u = static_cast<uint64_t>(load(p, t->size));
    v.zero = v.u == 0;
    if (btf_int_encoding(t) & BTF_INT_BOOL) {
      v.kind = LeafKind::Bool;
      v.u = v.u != 0;
    } else if (btf_int_encoding(t) & BTF_INT_SIGNED) {
      v.kind = LeafKind::Signed;
      v.i = signExtended(v.u, 8 * t->size);
    }
    return v;
  }

  /// The name of enum `t`'s enumerator whose value's `mask` bits are `u`, or empty.
  std::string_view enumeratorName(const ::btf_type* t, uint64_t u, uint64_t mask) const {
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      bool is64 = btf_is_enum64(t);
      uint64_t value = is64 ? btf_enum64_value(&btf_enum64(t)[i])
                            : static_cast<uint64_t>(static_cast<int64_t>(btf_enum(t)[i].val));
      if ((value & mask) != u) continue;
      const char* name = btf_->name(is64 ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off);
      return name ? name : "";
    }
    return "";
  }

  /// An enumerator by name; a value none has as a number (signed when the enum is).
  DumpLeaf enumerator(const ::btf_type* t, const uint8_t* p) const {
    uint32_t size = std::min<uint32_t>(t->size, 8);
    uint64_t mask = size >= 8 ? ~0ull : (1ull << 8 * size) - 1;
    DumpLeaf v;
    v.u = static_cast<uint64_t>(load(p, size));
    v.zero = v.u == 0;
    v.name = enumeratorName(t, v.u, mask);
    if (!v.name.empty()) {
      v.kind = LeafKind::Enumerator;
      return v;
    }
    if (btf_kflag(t)) {
      v.kind = LeafKind::Signed;
      v.i = signExtended(v.u, 8 * size);
    }
    return v;
  }

  static DumpLeaf floating(const ::btf_type* t, const uint8_t* p) {
    DumpLeaf v;
    v.kind = LeafKind::Float;
    v.zero = std::all_of(p, p + t->size, [](uint8_t b) { return b == 0; });
    if (t->size == 4) {
      float f;
      std::memcpy(&f, p, 4);
      v.d = f;
    } else if (t->size == 8) {
      std::memcpy(&v.d, p, 8);
    } else {
      v.kind = LeafKind::Wide;  // long double: its bytes
      v.bytes = p;
      v.size = t->size;
    }
    return v;
  }

  const host::BtfView* btf_;
  const uint8_t* bytes_;
  size_t captured_;
  uint64_t full_;
  DumpOutput& out_;
  bool stopped_ = false;
};

}  // namespace

void walkValue(const host::BtfView* btf, uint32_t id, const uint8_t* bytes, size_t captured, DumpOutput& out) {
  int64_t full = btf->resolveSize(id);
  if (full < 0) return;
  captured = std::min<size_t>(captured, static_cast<size_t>(full));
  Walk(btf, bytes, captured, static_cast<uint64_t>(full), out).value({"", id, false}, id, 0, 0);
}

}  // namespace kq::runtime
