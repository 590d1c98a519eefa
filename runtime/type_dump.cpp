#include "runtime/type_dump.h"

#include "runtime/dump_zeroes.h"

#include <bpf/btf.h>

#include <cstdarg>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "runtime/printed.h"

namespace kq::runtime {
namespace {

using Json = nlohmann::ordered_json;

std::string enumeratorName(const ::btf* btf, uint32_t id, int64_t value) {
  const ::btf_type* t = btf__type_by_id(btf, id);
  if (!t || !btf_is_any_enum(t)) return std::to_string(value);
  bool is64 = btf_is_enum64(t);
  for (uint16_t i = 0; i < btf_vlen(t); ++i) {
    int64_t v = is64 ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(t)[i])) : btf_enum(t)[i].val;
    if (v == value) return btf__name_by_offset(btf, is64 ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off);
  }
  return std::to_string(value);
}

Json jsonOf(const ::btf* btf, uint32_t id, const uint8_t* p, size_t avail, int depth);

Json intJson(const ::btf_type* t, const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, std::min<size_t>(t->size, 8));
  if (btf_int_encoding(t) & BTF_INT_BOOL) return v != 0;
  if (btf_int_encoding(t) & BTF_INT_SIGNED) {
    int shift = 64 - 8 * std::min<int>(t->size, 8);
    return static_cast<int64_t>(v << shift) >> shift;
  }
  return v;
}

/// Whether `elem` is C's `char` (a text character): pahole's BTF gives the kernel's `char`
/// no BTF_INT_CHAR encoding, only its name; `unsigned char` and `u8` arrays are bytes.
bool isCharType(const ::btf* btf, const ::btf_type* elem) {
  if (!elem || !btf_is_int(elem) || elem->size != 1) return false;
  if (btf_int_encoding(elem) & BTF_INT_CHAR) return true;
  const char* name = btf__name_by_offset(btf, elem->name_off);
  return name && (std::strcmp(name, "char") == 0 || std::strcmp(name, "signed char") == 0);
}

/// Char arrays as strings; other arrays element by element.
Json arrayJson(const ::btf* btf, const ::btf_type* t, const uint8_t* p, size_t avail, int depth) {
  const struct btf_array* a = btf_array(t);
  const ::btf_type* elem = btf__type_by_id(btf, a->type);
  while (elem && (btf_is_typedef(elem) || btf_is_mod(elem))) elem = btf__type_by_id(btf, elem->type);
  if (isCharType(btf, elem)) {
    return stringText(p, a->nelems);
  }
  int64_t elem_size = btf__resolve_size(btf, a->type);
  Json out = Json::array();
  for (uint32_t i = 0; i < a->nelems && elem_size > 0; ++i) {
    out.push_back(jsonOf(btf, a->type, p + i * elem_size, avail - i * elem_size, depth + 1));
  }
  return out;
}

Json recordJsonOf(const ::btf* btf, const ::btf_type* t, const uint8_t* p, size_t avail, int depth) {
  Json out = Json::object();
  const btf_member* m = btf_members(t);
  for (uint16_t i = 0; i < btf_vlen(t); ++i) {
    uint32_t bit = btf_member_bit_offset(t, i);
    uint32_t bits = btf_member_bitfield_size(t, i);
    const char* name = btf__name_by_offset(btf, m[i].name_off);
    if (bit / 8 >= avail) continue;
    if (bits) {
      uint64_t v = 0;
      std::memcpy(&v, p + bit / 8, std::min<size_t>(8, avail - bit / 8));
      v = (v >> (bit % 8)) & (bits >= 64 ? ~0ull : (1ull << bits) - 1);
      out[name] = v;
      continue;
    }
    Json value = jsonOf(btf, m[i].type, p + bit / 8, avail - bit / 8, depth + 1);
    if (!name || !*name) {
      if (value.is_object()) out.update(value);  // anonymous members lift into the parent
      continue;
    }
    out[name] = value;
  }
  return out;
}

/// A value of BTF type `id` as JSON: objects for records, strings for char arrays, enumerator
/// names, numbers; null for what was not captured.
Json jsonOf(const ::btf* btf, uint32_t id, const uint8_t* p, size_t avail, int depth) {
  const ::btf_type* t = btf__type_by_id(btf, id);
  while (t && (btf_is_typedef(t) || btf_is_mod(t) || btf_is_type_tag(t))) {
    id = t->type;
    t = btf__type_by_id(btf, id);
  }
  if (!t || depth > 16) return nullptr;
  int64_t size = btf__resolve_size(btf, id);
  // A struct or union cut short (its first `dump_bytes`) shows the members that were
  // captured; anything else not captured whole is null.
  if (btf_is_composite(t)) return recordJsonOf(btf, t, p, avail, depth);
  if (size > 0 && static_cast<size_t>(size) > avail) return nullptr;
  switch (btf_kind(t)) {
    case BTF_KIND_INT: return intJson(t, p);
    case BTF_KIND_PTR: return fmt::format("0x{:x}", readU64(p));
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64: {
      int64_t v = 0;
      std::memcpy(&v, p, std::min<size_t>(t->size, 8));
      if (t->size < 8) v = static_cast<int64_t>(static_cast<int32_t>(v));
      return enumeratorName(btf, id, v);
    }
    case BTF_KIND_ARRAY: return arrayJson(btf, t, p, avail, depth);
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION: return recordJsonOf(btf, t, p, avail, depth);
    default: return nullptr;
  }
}

void appendFormatted(void* ctx, const char* format, va_list args) {
  auto* out = static_cast<std::string*>(ctx);
  char buffer[1024];
  int n = std::vsnprintf(buffer, sizeof buffer, format, args);
  if (n > 0) out->append(buffer, std::min<size_t>(n, sizeof buffer - 1));
}

}  // namespace

TypeDumper::TypeDumper(KernelTypes* types) : types_(types) {}

TypeDumper::~TypeDumper() {
  for (auto& [btf, dumper] : dumpers_) btf_dump__free(dumper);
}

void TypeDumper::prepare(const plan::ProgramLayout& layout) {
  for (const plan::ProbeLayout& probe : layout.probes) {
    for (const plan::FieldLayout& f : probe.fields) typeOf(f);
  }
  for (const plan::AggregateLayout& aggregate : layout.aggregates) {
    for (const plan::FieldLayout& f : aggregate.keys) typeOf(f);
  }
}

KernelType TypeDumper::typeOf(const plan::FieldLayout& f) {
  if (f.kind != plan::FieldKind::Enum && f.kind != plan::FieldKind::Record) return {};
  if (auto it = fields_.find(&f); it != fields_.end()) return it->second;
  KernelType type;
  if (types_) {
    type = types_->find(f.type_name);
    // Anonymous types (`struct (anon)`) have no name to find; their id is all there is.
    if (!type) type = types_->byVmlinuxId(f.btf_id);
  }
  return fields_[&f] = type;
}

::btf_dump* TypeDumper::dumperFor(const ::btf* btf) {
  auto it = dumpers_.find(btf);
  if (it != dumpers_.end()) return it->second;
  ::btf_dump* dumper = btf_dump__new(btf, appendFormatted, &dumped_, nullptr);
  return dumpers_[btf] = dumper;  // null too: not tried again
}

std::string TypeDumper::enumText(const plan::FieldLayout& f, int64_t value) {
  KernelType type = typeOf(f);
  return type ? enumeratorName(type.btf, type.id, value) : std::to_string(value);
}

std::string TypeDumper::recordText(const plan::FieldLayout& f, const uint8_t* bytes) {
  KernelType type = typeOf(f);
  if (!type) return f.type_name.empty() ? "(no BTF to show it with)"
                                        : fmt::format("(no type `{}` in this kernel)", f.type_name);
  int64_t full = btf__resolve_size(type.btf, type.id);
  if (full <= 0) return "(unknown size)";
  // Reused: a flood of dumps must not allocate a struct's worth per event.
  std::vector<uint8_t>& padded = padded_;
  padded.assign(static_cast<size_t>(full), 0);
  std::memcpy(padded.data(), bytes, std::min<size_t>(f.size, padded.size()));
  ::btf_dump* dumper = dumperFor(type.btf);
  if (!dumper) return "(cannot dump)";
  dumped_.clear();
  LIBBPF_OPTS(btf_dump_type_data_opts, opts, .indent_str = "    ", .emit_zeroes = true);
  int err = btf_dump__dump_type_data(dumper, type.id, padded.data(), padded.size(), &opts);
  if (err < 0) return fmt::format("(cannot dump: {})", std::strerror(-err));
  // Every member from libbpf, then the zeroes left out here (see dump_zeroes.h).
  std::string out = withoutZeroes(dumped_);
  if (static_cast<int64_t>(f.size) < full) out += fmt::format("  /* first {} of {} bytes */", f.size, full);
  return out;
}

nlohmann::ordered_json TypeDumper::recordJson(const plan::FieldLayout& f, const uint8_t* bytes) {
  KernelType type = typeOf(f);
  return type ? jsonOf(type.btf, type.id, bytes, f.size, 0) : Json(nullptr);
}

}  // namespace kq::runtime
