#include "compiler/lower/core_types.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

namespace kq::lower {
namespace {

std::atomic<uint32_t> g_compilations{0};

}  // namespace

CoreTypes::CoreTypes(BpfModule& module) : module_(module), compile_id_(++g_compilations) {}

std::string CoreTypes::suffixed(std::string_view name) const {
  if (name.empty()) return "";
  return fmt::format("{}___kq{}", name, compile_id_);
}

llvm::DICompositeType* CoreTypes::placeholder(btf::BtfType record) {
  auto key = std::pair{record.file, record.id};
  if (auto it = records_.find(key); it != records_.end()) return it->second.di;
  if (auto it = placeholders_.find(key); it != placeholders_.end()) return it->second;
  const ::btf_type* raw = record.get();
  llvm::DIBuilder& di = module_.di();
  std::string name = suffixed(record.name());
  auto* type = btf_is_union(raw)
                   ? di.createUnionType(module_.unit(), name, module_.file(), 0, raw->size * 8, 8,
                                        llvm::DINode::FlagZero, di.getOrCreateArray({}))
                   : di.createStructType(module_.unit(), name, module_.file(), 0, raw->size * 8, 8,
                                         llvm::DINode::FlagZero, nullptr, di.getOrCreateArray({}));
  return placeholders_[key] = type;
}

llvm::DICompositeType* CoreTypes::enumDi(btf::BtfType t, const std::string& name) {
  const ::btf_type* raw = t.get();
  llvm::DIBuilder& di = module_.di();
  std::vector<llvm::Metadata*> values;
  bool is64 = btf_is_enum64(raw);
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    uint32_t off = is64 ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off;
    int64_t v = is64 ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(raw)[i]))
                     : btf_enum(raw)[i].val;
    values.push_back(di.createEnumerator(t.file->btf->name(off), v));
  }
  auto* base = di.createBasicType("unsigned int", raw->size * 8, llvm::dwarf::DW_ATE_unsigned);
  return di.createEnumerationType(module_.unit(), name, module_.file(), 0, raw->size * 8, 32,
                                  di.getOrCreateArray(values), base);
}

llvm::DICompositeType* CoreTypes::relocatableEnum(btf::BtfType type) {
  btf::BtfType t = type.resolved();
  if (t.id == 0 || !btf_is_any_enum(t.get()) || t.name().empty()) return nullptr;
  auto key = std::pair{t.file, t.id};
  if (auto it = enums_.find(key); it != enums_.end()) return it->second;
  return enums_[key] = enumDi(t, suffixed(t.name()));
}

llvm::StructType* CoreTypes::storageUnit(uint32_t bytes) {
  llvm::Type* unit = llvm::Type::getIntNTy(module_.context(), bytes * 8);
  return llvm::StructType::get(module_.context(), llvm::ArrayRef<llvm::Type*>(unit));
}

// The debug-info type of a member, as libbpf compares it with the kernel's: ints with ints,
// pointers with pointers (any target), arrays element-wise, enums by name, records by kind.
llvm::DIType* CoreTypes::memberDi(btf::BtfType type) {
  btf::BtfType t = type.resolved();
  auto key = std::pair{t.file, t.id};
  if (auto it = others_.find(key); it != others_.end()) return it->second;
  llvm::DIBuilder& di = module_.di();
  llvm::DIType* out = nullptr;
  if (t.id == 0) return nullptr;
  const ::btf_type* raw = t.get();
  switch (btf_kind(raw)) {
    case BTF_KIND_INT: {
      uint8_t enc = btf_int_encoding(raw);
      unsigned dwarf = (enc & BTF_INT_BOOL)     ? llvm::dwarf::DW_ATE_boolean
                       : (enc & BTF_INT_CHAR)   ? llvm::dwarf::DW_ATE_signed_char
                       : (enc & BTF_INT_SIGNED) ? llvm::dwarf::DW_ATE_signed
                                                : llvm::dwarf::DW_ATE_unsigned;
      out = di.createBasicType(std::string(t.name()), raw->size * 8, dwarf);
      break;
    }
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64:
      out = enumDi(t, std::string(t.name()));
      break;
    case BTF_KIND_PTR:
      out = di.createPointerType(nullptr, 64);
      break;
    case BTF_KIND_ARRAY: {
      const struct btf_array* array = btf_array(raw);
      llvm::DIType* element = memberDi({t.file, array->type});
      uint64_t bits = t.size() * 8;
      out = di.createArrayType(bits, 8, element,
                               di.getOrCreateArray({di.getOrCreateSubrange(0, array->nelems)}));
      break;
    }
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION:
      // An anonymous member is reached only through its parent: describe it fully, so the
      // BPF backend folds `skb->mark` (through an anonymous union) into one relocation
      // rooted at the named parent, the only kind libbpf can match.
      if (t.name().empty()) return record(t).di;
      if (auto it = records_.find(key); it != records_.end()) return it->second.di;
      return placeholder(t);
    default:
      out = di.createBasicType("unsigned char", 8, llvm::dwarf::DW_ATE_unsigned);
      break;
  }
  return others_[key] = out;
}

const CoreTypes::Record& CoreTypes::record(btf::BtfType type) {
  btf::BtfType t = type.resolved();
  auto key = std::pair{t.file, t.id};
  if (auto it = records_.find(key); it != records_.end()) return it->second;

  const ::btf_type* raw = t.get();
  llvm::LLVMContext& ctx = module_.context();
  llvm::DIBuilder& di = module_.di();
  Record out;
  out.is_union = btf_is_union(raw);
  const btf_member* members = btf_members(raw);
  uint16_t count = btf_vlen(raw);
  out.index.assign(count, {-1, -1});

  // IR: a packed struct of byte arrays at the members' offsets (a union: its bytes).
  std::vector<llvm::Type*> elements;
  std::vector<llvm::Metadata*> di_members;
  auto* byte = llvm::Type::getInt8Ty(ctx);
  uint64_t at = 0;  // bytes laid out so far
  std::vector<uint16_t> order(count);
  for (uint16_t i = 0; i < count; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint16_t a, uint16_t b) {
    return btf_member_bit_offset(raw, a) < btf_member_bit_offset(raw, b);
  });
  for (uint16_t i : order) {
    btf::BtfType member{t.file, members[i].type};
    uint32_t bit_offset = btf_member_bit_offset(raw, i);
    uint32_t bits = btf_member_bitfield_size(raw, i);
    uint64_t offset = bit_offset / 8;
    uint64_t size = member.size();
    const char* name = t.file->btf->name(members[i].name_off);
    int ir_index = 0;
    if (bits || (!out.is_union && offset < at)) {
      // A bitfield, or a member overlapping the previous one: no IR element of its own.
      ir_index = -1;
    } else if (!out.is_union) {
      if (offset > at) elements.push_back(llvm::ArrayType::get(byte, offset - at));
      ir_index = static_cast<int>(elements.size());
      elements.push_back(llvm::ArrayType::get(byte, size));
      at = offset + size;
    }
    out.index[i] = {ir_index, static_cast<int>(di_members.size())};
    di_members.push_back(
        bits ? di.createBitFieldMemberType(module_.unit(), name ? name : "", module_.file(), 0, bits,
                                           bit_offset, bit_offset & ~7u, llvm::DINode::FlagZero,
                                           memberDi(member))
             : di.createMemberType(module_.unit(), name ? name : "", module_.file(), 0, size * 8, 8,
                                   offset * 8, llvm::DINode::FlagZero, memberDi(member)));
  }
  if (out.is_union) {
    elements.push_back(llvm::ArrayType::get(byte, raw->size));
  } else if (at < raw->size) {
    elements.push_back(llvm::ArrayType::get(byte, raw->size - at));
  }
  out.ir = llvm::StructType::create(ctx, elements, suffixed(t.name().empty() ? "anon" : t.name()), true);

  std::string name = suffixed(t.name());
  auto array = di.getOrCreateArray(di_members);
  out.di = out.is_union
               ? di.createUnionType(module_.unit(), name, module_.file(), 0, raw->size * 8, 8,
                                    llvm::DINode::FlagZero, array)
               : di.createStructType(module_.unit(), name, module_.file(), 0, raw->size * 8, 8,
                                     llvm::DINode::FlagZero, nullptr, array);
  return records_[key] = out;
}

}  // namespace kq::lower
