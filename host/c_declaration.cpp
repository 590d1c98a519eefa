#include "host/c_declaration.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

namespace kq::host {
namespace {

// Deeper than any C declaration: a loop in a malformed file.
constexpr int kMaxDepth = 64;

std::string nameOf(const host::BtfView* btf, const ::btf_type* t) {
  const char* name = btf->name(t->name_off);
  return name ? name : "";
}

/// The words a type that is not a declarator is written with: `unsigned int`, `struct
/// sk_buff`, `sk_buff_data_t`; an anonymous one by its keyword.
std::string baseName(const host::BtfView* btf, const ::btf_type* t, DeclarationStyle style) {
  std::string name = nameOf(btf, t);
  std::string keyword;
  switch (btf_kind(t)) {
    case BTF_KIND_STRUCT: keyword = "struct"; break;
    case BTF_KIND_UNION: keyword = "union"; break;
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64: keyword = "enum"; break;
    case BTF_KIND_FWD: keyword = btf_kflag(t) ? "union" : "struct"; break;
    default: return name.empty() ? "?" : name;
  }
  if (!name.empty()) return keyword + " " + name;
  return style == DeclarationStyle::Cast ? keyword : keyword + " {...}";
}

/// `base` declaring `declarator`: `char *p`, `char[4]` (a cast's array), `void (*)(int)`.
std::string joined(const std::string& base, const std::string& declarator) {
  if (declarator.empty()) return base;
  if (declarator[0] == '[') return base + declarator;
  return base + " " + declarator;
}

/// An array's or function's suffix binds tighter than a pointer: `(*p)[4]`, `(*f)(int)`.
std::string boundTightly(const std::string& declarator) {
  return !declarator.empty() && declarator[0] == '*' ? "(" + declarator + ")" : declarator;
}

/// C's qualifiers, as the bits of a set.
enum Qualifier : unsigned { kConst = 1, kVolatile = 2, kRestrict = 4 };

/// `const volatile ` for a set of qualifiers.
std::string qualifierWords(unsigned qualifiers) {
  std::string out;
  if (qualifiers & kConst) out += "const ";
  if (qualifiers & kVolatile) out += "volatile ";
  if (qualifiers & kRestrict) out += "restrict ";
  return out;
}

/// `qualifiers` are those of the type `id` itself, waiting for the words it is written with
/// (`const char`) or its pointer (`*const`); an array's are its elements'.
std::string declare(const host::BtfView* btf, uint32_t id, const std::string& declarator, DeclarationStyle style,
                    int depth, unsigned qualifiers = 0);

std::string parameters(const host::BtfView* btf, const ::btf_type* proto, DeclarationStyle style, int depth) {
  const struct btf_param* params = btf_params(proto);
  uint16_t count = btf_vlen(proto);
  if (count == 0) return "(void)";
  std::string out = "(";
  for (uint16_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    if (params[i].type == 0) {  // a trailing `...`
      out += "...";
      continue;
    }
    const char* name = btf->name(params[i].name_off);
    std::string declarator = style == DeclarationStyle::Full && name ? name : "";
    out += declare(btf, params[i].type, declarator, style, depth + 1);
  }
  return out + ")";
}

std::string declare(const host::BtfView* btf, uint32_t id, const std::string& declarator, DeclarationStyle style,
                    int depth, unsigned qualifiers) {
  std::string words = style == DeclarationStyle::Cast ? "" : qualifierWords(qualifiers);
  if (id == 0) return joined(words + "void", declarator);
  const ::btf_type* t = btf->type(id);
  if (!t || depth > kMaxDepth) return joined("?", declarator);
  switch (btf_kind(t)) {
    case BTF_KIND_PTR: {
      // `char *const p`: the pointer's own qualifiers follow its star.
      if (!words.empty() && declarator.empty()) words.pop_back();
      return declare(btf, t->type, "*" + words + declarator, style, depth + 1);
    }
    case BTF_KIND_CONST: return declare(btf, t->type, declarator, style, depth + 1, qualifiers | kConst);
    case BTF_KIND_VOLATILE: return declare(btf, t->type, declarator, style, depth + 1, qualifiers | kVolatile);
    case BTF_KIND_RESTRICT: return declare(btf, t->type, declarator, style, depth + 1, qualifiers | kRestrict);
    case BTF_KIND_TYPE_TAG:  // `__user`, `__rcu`: attributes, not C
      return declare(btf, t->type, declarator, style, depth + 1, qualifiers);
    case BTF_KIND_ARRAY: {
      const struct btf_array* a = btf_array(t);
      return declare(btf, a->type, boundTightly(declarator) + "[" + std::to_string(a->nelems) + "]", style,
                     depth + 1, qualifiers);
    }
    case BTF_KIND_FUNC_PROTO:
      return declare(btf, t->type, boundTightly(declarator) + parameters(btf, t, style, depth), style,
                     depth + 1);
    case BTF_KIND_FUNC: return declare(btf, t->type, declarator, style, depth + 1);
    default: return joined(words + baseName(btf, t, style), declarator);
  }
}

}  // namespace

std::string cDeclaration(const host::BtfView* btf, uint32_t id, std::string_view name, DeclarationStyle style) {
  return declare(btf, id, std::string(name), style, 0);
}

}  // namespace kq::host
