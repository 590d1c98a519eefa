// Builtin functions that turn values into text: str, hex, ntop, ksym, usym, errno, fmt.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

bool isAddress(const Type* t) { return t->isError() || t->isPointer() || t->kind == TypeKind::Int; }

const Type* checkStr(BuiltinCall& c) {
  const Type* p = c.args[0];
  // An integer is an address too: uprobe arguments are plain 64-bit registers.
  if (!(p->isError() || p->isPointer() || p->kind == TypeKind::Array ||
        p->kind == TypeKind::String || p->kind == TypeKind::Int)) {
    return c.badArgument(0, "a pointer or a char array");
  }
  if (c.args.size() == 2 && !(c.args[1]->isInteger() || c.args[1]->isError())) {
    return c.badArgument(1, "a length");
  }
  return c.types.string();
}

const Type* checkInteger(BuiltinCall& c) {
  if (!(c.args[0]->isInteger() || c.args[0]->isPointer() || c.args[0]->isError())) {
    return c.badArgument(0, "an integer");
  }
  return c.types.string();
}

const Type* checkAddress(BuiltinCall& c) {
  if (!isAddress(c.args[0])) return c.badArgument(0, "an address");
  return c.types.string();
}

const Type* checkNtop(BuiltinCall& c) {
  const Type* a = c.args[0];
  bool ok = a->isError() || a->kind == TypeKind::Int || a->kind == TypeKind::Array ||
            a->isRecord() || a->isPointer();
  if (!ok) return c.badArgument(0, "an IPv4 or IPv6 address");
  return c.types.string();
}

const Type* checkFmt(BuiltinCall& c) {
  if (!c.args[0]->isError() && c.args[0]->kind != TypeKind::String) {
    return c.badArgument(0, "a format string");
  }
  if (c.call.args[0]->kind != ast::ExprKind::String) {
    c.diags.report(DiagKind::TypeMismatch, c.call.args[0]->range,
                   "`fmt` needs its format as a string literal");
    return c.types.error();
  }
  return c.types.string();
}

}  // namespace

void addFormatFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      {"str", 1, 2, false, checkStr, "str(p[, n])"},
      {"hex", 1, 1, false, checkInteger, "hex(x)"},
      {"errno", 1, 1, false, checkInteger, "errno(x)"},
      {"ntop", 1, 1, false, checkNtop, "ntop(addr)"},
      {"ksym", 1, 1, false, checkAddress, "ksym(addr)"},
      {"usym", 1, 1, false, checkAddress, "usym(addr)"},
      {"fmt", 1, 16, false, checkFmt, "fmt(\"format\", x...)"},
  });
}

}  // namespace kq::sema
