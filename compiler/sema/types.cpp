#include "compiler/sema/types.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

#include <algorithm>

#include <fmt/format.h>

namespace kq::sema {

bool Type::isStringLike() const {
  if (kind == TypeKind::String) return true;
  if ((kind == TypeKind::Array || kind == TypeKind::Pointer) && element) {
    return element->kind == TypeKind::Int && element->is_char;
  }
  return false;
}

TypeTable::TypeTable() {
  error_ = add({TypeKind::Error, "<error>"});
  void_ = add({TypeKind::Void, "void"});
  Type b{TypeKind::Bool, "bool"};
  b.size = 1;
  bool_ = add(b);
  string_ = add({TypeKind::String, "string"});
  u64_ = integer(8, false);
  s64_ = integer(8, true);
  u32_ = integer(4, false);
  s32_ = integer(4, true);
  names_table_ = add({TypeKind::Table, "{integer: string}"});
  numbers_table_ = add({TypeKind::Table, "{string: integer}"});
}

const Type* TypeTable::add(Type type) {
  types_.push_back(std::move(type));
  return &types_.back();
}

const Type* TypeTable::arrayOf(const Type* element, uint32_t count) {
  auto found = arrays_.find({element, count});
  if (found != arrays_.end()) return found->second;
  Type t{TypeKind::Array, fmt::format("{}[{}]", element->spelling, count)};
  t.element = element;
  t.count = count;
  t.size = element->size * count;
  return arrays_[{element, count}] = add(t);
}

bool sameType(const Type* a, const Type* b) {
  if (a == b) return true;
  if (a->isPointer() && b->isPointer()) return sameType(a->element, b->element);
  if (a->isRecord() && b->isRecord()) return btf::sameRecord(a->btf.resolved(), b->btf.resolved());
  return false;
}

const Type* TypeTable::integer(uint32_t size, bool is_signed, std::string spelling) {
  if (spelling.empty()) spelling = fmt::format("{}{}", is_signed ? 's' : 'u', size * 8);
  auto it = integers_.find(spelling);
  if (it != integers_.end()) return it->second;
  Type t{TypeKind::Int, spelling};
  t.size = size;
  t.is_signed = is_signed;
  t.is_char = spelling == "char" || spelling == "signed char" || spelling == "unsigned char";
  return integers_[spelling] = add(t);
}

const Type* TypeTable::pointerTo(const Type* pointee) {
  auto it = pointers_.find(pointee);
  if (it != pointers_.end()) return it->second;
  Type t{TypeKind::Pointer, pointee->spelling + (pointee->isPointer() ? "*" : " *")};
  t.size = 8;
  t.element = pointee;
  return pointers_[pointee] = add(t);
}

const Type* TypeTable::fromBtf(btf::BtfType type) {
  if (type.id == 0) return void_;
  auto key = std::pair{type.file, type.id};
  if (auto it = from_btf_.find(key); it != from_btf_.end()) return it->second;

  const ::btf_type* raw = type.get();
  std::string name(type.name());
  const Type* out = nullptr;
  switch (btf_kind(raw)) {
    case BTF_KIND_TYPEDEF: {
      Type t = *fromBtf({type.file, raw->type});
      t.spelling = name;
      out = add(t);
      break;
    }
    case BTF_KIND_CONST:
    case BTF_KIND_VOLATILE:
    case BTF_KIND_RESTRICT:
    case BTF_KIND_TYPE_TAG:
      out = fromBtf({type.file, raw->type});
      break;
    case BTF_KIND_INT: {
      uint8_t encoding = btf_int_encoding(raw);
      if (encoding & BTF_INT_BOOL) {
        out = bool_;
        break;
      }
      Type t{TypeKind::Int, name};
      t.size = raw->size;
      t.is_signed = encoding & BTF_INT_SIGNED;
      t.is_char = (encoding & BTF_INT_CHAR) || name == "char" || name == "unsigned char" ||
                  name == "signed char";
      out = add(t);
      break;
    }
    case BTF_KIND_PTR:
      out = pointerTo(fromBtf({type.file, raw->type}));
      break;
    case BTF_KIND_ARRAY: {
      const struct btf_array* array = btf_array(raw);
      const Type* element = fromBtf({type.file, array->type});
      Type t{TypeKind::Array, fmt::format("{}[{}]", element->spelling, array->nelems)};
      t.element = element;
      t.count = array->nelems;
      t.btf = type;
      t.size = static_cast<uint32_t>(type.size());
      out = add(t);
      break;
    }
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION: {
      bool is_struct = btf_is_struct(raw);
      Type t{is_struct ? TypeKind::Struct : TypeKind::Union,
             fmt::format("{} {}", is_struct ? "struct" : "union", name.empty() ? "(anon)" : name)};
      t.size = raw->size;
      t.btf = type;
      out = add(t);
      break;
    }
    case BTF_KIND_FWD: {
      bool is_union = btf_kflag(raw);
      Type t{is_union ? TypeKind::Union : TypeKind::Struct,
             fmt::format("{} {}", is_union ? "union" : "struct", name)};
      t.btf = type;
      t.incomplete = true;
      out = add(t);
      break;
    }
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64: {
      Type t{TypeKind::Enum, name.empty() ? "enum (anon)" : "enum " + name};
      t.size = raw->size;
      t.is_signed = btf_kflag(raw);
      t.btf = type;
      out = add(t);
      break;
    }
    case BTF_KIND_FUNC_PROTO:
      out = add({TypeKind::Function, "function"});
      break;
    case BTF_KIND_FLOAT: {
      // kq has no floating point; a float reads as its bits.
      out = integer(raw->size, false, name);
      break;
    }
    default:
      out = error_;
      break;
  }
  from_btf_[key] = out;
  return out;
}

namespace {

void collectMembers(btf::BtfType record, std::vector<std::string>& out) {
  const ::btf_type* raw = record.get();
  const btf_member* members = btf_members(raw);
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    const char* name = record.file->btf->name(members[i].name_off);
    if (name && *name) {
      out.push_back(name);
      continue;
    }
    btf::BtfType inner = btf::BtfType{record.file, members[i].type}.resolved();
    if (btf_is_composite(inner.get())) collectMembers(inner, out);
  }
}

bool findIn(TypeTable& table, btf::BtfType record, std::string_view name, uint64_t base_bits,
            MemberPath& path) {
  const ::btf_type* raw = record.get();
  const btf_member* members = btf_members(raw);
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    const char* member_name = record.file->btf->name(members[i].name_off);
    uint64_t bits = base_bits + btf_member_bit_offset(raw, i);
    path.steps.emplace_back(record, i);
    if (member_name && name == member_name) {
      path.type = table.fromBtf({record.file, members[i].type});
      path.bit_offset = bits;
      path.bitfield_bits = btf_member_bitfield_size(raw, i);
      return true;
    }
    if (!member_name || !*member_name) {
      btf::BtfType inner = btf::BtfType{record.file, members[i].type}.resolved();
      if (btf_is_composite(inner.get()) && findIn(table, inner, name, bits, path)) return true;
    }
    path.steps.pop_back();
  }
  return false;
}

}  // namespace

std::optional<MemberPath> TypeTable::findMember(const Type* record, std::string_view name) {
  if (!record->isRecord() || record->incomplete) return std::nullopt;
  MemberPath path;
  if (!findIn(*this, record->btf.resolved(), name, 0, path)) return std::nullopt;
  return path;
}

std::vector<std::string> TypeTable::memberNames(const Type* record) {
  std::vector<std::string> out;
  if (record->isRecord() && !record->incomplete) collectMembers(record->btf.resolved(), out);
  return out;
}

size_t editDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insertions, deletions, substitutions and swaps of neighbours.
  size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  auto at = [&](size_t i, size_t j) -> size_t& { return d[i * w + j]; };
  for (size_t i = 0; i <= a.size(); ++i) at(i, 0) = i;
  for (size_t j = 0; j <= b.size(); ++j) at(0, j) = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

std::optional<std::string> closestName(std::string_view name,
                                       const std::vector<std::string_view>& candidates) {
  size_t limit = std::max<size_t>(1, name.size() / 3);
  size_t best = limit + 1;
  std::string_view found;
  for (std::string_view candidate : candidates) {
    size_t length_gap = candidate.size() > name.size() ? candidate.size() - name.size()
                                                       : name.size() - candidate.size();
    if (length_gap > limit) continue;
    size_t d = editDistance(name, candidate);
    if (d < best || (d == best && candidate < found)) {
      best = d;
      found = candidate;
    }
  }
  if (best > limit) return std::nullopt;
  return std::string(found);
}

}  // namespace kq::sema
