// An extension's `select` items as ipftrace2's event struct (kq-language §6,
// ../shared/reference/ipft-extension-abi.md): each item a member of `module()`'s 64-byte
// `data`, at its natural alignment, of a type ipftrace2 prints: an integer of 8 to 64 bits,
// a bool, a char or a pointer; `hex(x)` and enum-typed values keep their integer and say
// how to print it. ipftrace2 names members by their BTF names, so each item has one.
#include <fmt/format.h>

#include <bpf/btf.h>

#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"

namespace kq::sema {
namespace {

using Shape = ExtensionMember::Shape;
using Format = ExtensionMember::Format;

/// The item's member name: its `as` name, or the name it selects; empty when it has none.
std::string memberName(const ast::SelectItem& item) {
  if (item.alias) return *item.alias;
  if (item.expr->kind == ast::ExprKind::Identifier) {
    return static_cast<const ast::Identifier&>(*item.expr).name;
  }
  return "";
}

/// Fills `m`'s shape and size from `type` (an integer or pointer). Returns why ipftrace2
/// cannot print it, or empty.
std::string shapeOf(const Type* type, ExtensionMember& m) {
  switch (type->kind) {
    case TypeKind::Bool:
      m.shape = Shape::Bool;
      m.size = 1;
      return "";
    case TypeKind::Int:
    case TypeKind::Enum:
      if (type->size != 1 && type->size != 2 && type->size != 4 && type->size != 8) {
        return fmt::format("a {}-bit integer", type->size * 8);
      }
      m.shape = type->is_char ? Shape::Char : Shape::Int;
      m.size = type->size;
      m.is_signed = type->is_signed;
      if (type->kind == TypeKind::Enum && m.format == Format::Plain) {
        // ipftrace2 reads an enum's names as 32-bit values.
        if (type->size > 4) return "an enum of 64-bit values";
        m.format = Format::Enum;
        m.enum_type = type->btf;
      }
      return "";
    case TypeKind::Pointer:
      m.shape = Shape::Pointer;
      m.size = 8;
      return "";
    case TypeKind::String: return "a string";
    case TypeKind::Struct:
    case TypeKind::Union: return "a struct or union";
    case TypeKind::Array: return "an array";
    case TypeKind::Table: return "a lookup table";
    case TypeKind::Void:
    case TypeKind::Function:
    case TypeKind::Error: break;
  }
  return fmt::format("a `{}`", type->spelling);
}

}  // namespace

void layOutExtension(Context& ctx, ResolvedExtension& ext) {
  uint32_t end = 0;
  bool reported_size = false;
  for (const ast::SelectItem& item : ext.decl->clauses.select) {
    const ExprInfo& info = ext.exprs.at(item.expr.get());
    if (!info.type || info.type->isError()) continue;
    ExtensionMember m;
    m.expr = item.expr.get();
    m.name = memberName(item);
    const Type* type = info.type;
    if (info.function && info.function->id == BuiltinFn::Hex) {
      m.format = Format::Hex;
      const auto& call = static_cast<const ast::Call&>(*item.expr);
      type = ext.exprs.at(call.args.front().get()).type;
      if (!type || type->isError()) continue;
    } else if ((info.function && info.function->field) || info.table) {
      // errno(), ntop(), ksym(), fmt(), a name from a table: text kq makes when it prints.
      ctx.diags.report(DiagKind::ExtensionValue, item.expr->range,
                       "ipftrace2 prints this value as a number, not as kq would show it")
          .note("an extension's values are integers, pointers and enums; `hex(x)` prints `x` "
                "in hexadecimal");
      continue;
    }
    std::string why = shapeOf(type, m);
    if (!why.empty()) {
      Diagnostic& d = ctx.diags.report(
          DiagKind::ExtensionValue, item.expr->range,
          fmt::format("ipftrace2 cannot print {}; an extension's values are integers, pointers "
                      "and enums",
                      why));
      if (type->isRecord() || type->kind == TypeKind::Array) {
        d.note("select one of its members or elements, or its address");
      }
      continue;
    }
    if (m.name.empty()) {
      ctx.diags
          .report(DiagKind::ExtensionValue, item.range,
                  "this value needs a name for ipftrace2 to print it under")
          .note("name it with `as`, like `skb->len as len`");
      continue;
    }
    bool duplicate = false;
    for (const ExtensionMember& other : ext.members) duplicate = duplicate || other.name == m.name;
    if (duplicate) {
      ctx.diags.report(DiagKind::ExtensionValue, item.range,
                       fmt::format("two values are named `{}`; ipftrace2 needs one name each",
                                   m.name));
      continue;
    }
    m.offset = (end + m.size - 1) / m.size * m.size;
    end = m.offset + m.size;
    if (end > kIpftDataBytes && !reported_size) {
      reported_size = true;
      ctx.diags
          .report(DiagKind::ExtensionTooLarge, item.expr->range,
                  fmt::format("the values selected up to here need {} bytes; ipftrace2 keeps {} "
                              "per event",
                              end, kIpftDataBytes))
          .note("select fewer values, or narrower ones (integers take their own size, pointers 8)");
    }
    ext.members.push_back(std::move(m));
  }
}

}  // namespace kq::sema
