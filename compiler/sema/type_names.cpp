// Types written as text: in casts and parameters (`struct sock *`, `unsigned long`, `u32`),
// and in tracefs format files (`const char *`, `__data_loc char[]`).
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "compiler/sema/context.h"

namespace kq::sema {
namespace {

/// C's scalar keywords, in any order (`long unsigned int`), as a kq integer type.
std::optional<const Type*> scalarType(TypeTable& types, const std::string& words) {
  std::istringstream in(words);
  int longs = 0, shorts = 0, chars = 0, ints = 0, voids = 0, bools = 0;
  bool is_unsigned = false, is_signed = false;
  for (std::string w; in >> w;) {
    if (w == "long") ++longs;
    else if (w == "short") ++shorts;
    else if (w == "char") ++chars;
    else if (w == "int") ++ints;
    else if (w == "void") ++voids;
    else if (w == "bool" || w == "_Bool") ++bools;
    else if (w == "unsigned") is_unsigned = true;
    else if (w == "signed") is_signed = true;
    else return std::nullopt;
  }
  int kinds = (longs > 0) + shorts + chars + voids + bools;
  if (kinds > 1 || longs > 2 || ints > 1 || (is_signed && is_unsigned)) return std::nullopt;
  if (voids || bools) {
    if (is_signed || is_unsigned || ints) return std::nullopt;
    return voids ? types.voidType() : types.boolType();
  }
  // Spelled as written, normalized: `long unsigned int` reads `unsigned long`.
  std::string sign = is_unsigned ? "unsigned " : is_signed ? "signed " : "";
  if (chars) {
    if (ints) return std::nullopt;
    return types.integer(1, !is_unsigned, sign + "char");
  }
  if (shorts) return types.integer(2, !is_unsigned, sign + "short");
  if (longs) return types.integer(8, !is_unsigned, sign + (longs == 2 ? "long long" : "long"));
  return types.integer(4, !is_unsigned, is_unsigned ? "unsigned int" : "int");
}

/// `u8`..`u64`, `s8`..`s64`, with an optional `__`, and `__be16`..`__le64`.
bool isKernelIntName(std::string_view name) {
  if (name.substr(0, 2) == "__") name.remove_prefix(2);
  std::string_view bits;
  if (!name.empty() && (name[0] == 'u' || name[0] == 's')) {
    bits = name.substr(1);
  } else if (name.substr(0, 2) == "be" || name.substr(0, 2) == "le") {
    bits = name.substr(2);
  } else {
    return false;
  }
  return bits == "8" || bits == "16" || bits == "32" || bits == "64";
}

/// `u32`, `__s64`, `__be16`: the kernel's typedef when BTF has it, else an integer.
const Type* kernelIntType(Context& ctx, const std::string& name) {
  if (auto typedef_type = ctx.btf.findTypedef(name)) return ctx.types.fromBtf(*typedef_type);
  std::string digits;
  for (char c : name) {
    if (isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  uint32_t bits = digits.empty() ? 32 : static_cast<uint32_t>(std::stoul(digits));
  std::string bare = name.substr(name.find_first_not_of('_'));
  bool is_signed = bare[0] == 's';
  return ctx.types.integer(bits / 8, is_signed, name);
}

}  // namespace

const Type* resolveTypeName(Context& ctx, const ast::TypeName& name) {
  const Type* base = nullptr;
  // A `use "header.h"` type first: a header may not redefine a kernel type (c_declarations.cpp).
  static constexpr const char* kTags[] = {"", "struct ", "union ", "enum "};
  auto header_type = ctx.header_types.find(kTags[static_cast<int>(name.tag)] + name.name);
  if (header_type != ctx.header_types.end()) {
    base = ctx.types.fromBtf(header_type->second);
    for (uint32_t i = 0; i < name.pointer_depth; ++i) base = ctx.types.pointerTo(base);
    return base;
  }
  switch (name.tag) {
    case ast::TypeName::Tag::Struct:
    case ast::TypeName::Tag::Union:
    case ast::TypeName::Tag::Enum: {
      bool is_struct = name.tag == ast::TypeName::Tag::Struct;
      bool is_union = name.tag == ast::TypeName::Tag::Union;
      auto found = is_struct  ? ctx.btf.findStruct(name.name)
                   : is_union ? ctx.btf.findUnion(name.name)
                              : ctx.btf.findEnum(name.name);
      std::string_view tag = is_struct ? "struct" : is_union ? "union" : "enum";
      if (!found) {
        Diagnostic& diag = ctx.diags.report(
            DiagKind::UnknownType, name.range,
            fmt::format("the kernel has no `{} {}`", tag, name.name));
        if (!ctx.header_types.empty()) diag.note("nor does a header the script `use`s");
        if (is_struct) {
          if (auto close = closestName(name.name, ctx.btf.structNames())) {
            diag.note(fmt::format("did you mean `struct {}`?", *close));
          }
        }
        return ctx.types.error();
      }
      base = ctx.types.fromBtf(*found);
      break;
    }
    case ast::TypeName::Tag::None: {
      if (auto scalar = scalarType(ctx.types, name.name)) {
        base = *scalar;
      } else if (auto typedef_type = ctx.btf.findTypedef(name.name)) {
        base = ctx.types.fromBtf(*typedef_type);
      } else if (isKernelIntName(name.name)) {
        base = kernelIntType(ctx, name.name);
      } else {
        Diagnostic& diag = ctx.diags.report(DiagKind::UnknownType, name.range,
                                            fmt::format("the kernel has no type `{}`", name.name));
        if (!ctx.header_types.empty()) diag.note("nor does a header the script `use`s");
        return ctx.types.error();
      }
      break;
    }
  }
  for (uint32_t i = 0; i < name.pointer_depth; ++i) base = ctx.types.pointerTo(base);
  return base;
}

const Type* typeFromCString(Context& ctx, const std::string& c_type, uint32_t size,
                            bool is_signed) {
  // `__data_loc char[] name`: a string stored after the record.
  if (c_type.rfind("__data_loc", 0) == 0) return ctx.types.string();
  std::string text = c_type;
  uint32_t array = 0;
  if (size_t bracket = text.find('['); bracket != std::string::npos) {
    array = static_cast<uint32_t>(std::strtoul(text.c_str() + bracket + 1, nullptr, 10));
    text = text.substr(0, bracket);
  }
  uint32_t pointers = static_cast<uint32_t>(std::count(text.begin(), text.end(), '*'));
  text.erase(std::remove(text.begin(), text.end(), '*'), text.end());

  std::istringstream in(text);
  std::string tag, words;
  for (std::string w; in >> w;) {
    if (w == "const" || w == "volatile" || w == "__user" || w == "__rcu") continue;
    if (w == "struct" || w == "union" || w == "enum") {
      tag = w;
      continue;
    }
    words += (words.empty() ? "" : " ") + w;
  }
  const Type* base = nullptr;
  if (tag == "struct") {
    if (auto t = ctx.btf.findStruct(words)) base = ctx.types.fromBtf(*t);
  } else if (tag == "union") {
    if (auto t = ctx.btf.findUnion(words)) base = ctx.types.fromBtf(*t);
  } else if (tag == "enum") {
    if (auto t = ctx.btf.findEnum(words)) base = ctx.types.fromBtf(*t);
  } else if (auto scalar = scalarType(ctx.types, words)) {
    base = *scalar;
  } else if (auto t = ctx.btf.findTypedef(words)) {
    base = ctx.types.fromBtf(*t);
  }
  if (!base) {
    // A type BTF does not know: a pointer stays a pointer; a value is an integer of its size.
    if (pointers > 0) {
      base = ctx.types.voidType();
    } else {
      uint32_t bytes = array ? size / std::max(array, 1u) : size;
      base = ctx.types.integer(bytes ? bytes : 8, is_signed);
    }
  }
  for (uint32_t i = 0; i < pointers; ++i) base = ctx.types.pointerTo(base);
  if (array) {
    // `char comm[16]` reads as a string; `__u8 saddr[4]` is bytes (an address), and
    // `unsigned long args[6]` six numbers.
    bool text = base->kind == TypeKind::Int && base->is_char && tag.empty() &&
                words.find("char") != std::string::npos;
    if (text) return ctx.types.string();
    return ctx.types.arrayOf(base, array);
  }
  return base;
}

}  // namespace kq::sema
