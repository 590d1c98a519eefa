// Builtin functions that turn values into text: str, hex, ntop, ksym, usym, errno, fmt; and
// kaddr, ksym's inverse: a kernel symbol's address.
#include <cstring>
#include "compiler/sema/builtins/builtins.h"

#include <fmt/format.h>

namespace kq::sema {
namespace {

using plan::FieldKind;

/// The longest `str(p, n)`: a record field, or a scratch buffer when compared.
constexpr int64_t kMaxStringBytes = 4096;

bool isAddress(const Type* t) { return t->isError() || t->isPointer() || t->kind == TypeKind::Int; }

/// A run-time `str` length's bound when none is given: bpftrace's default string size.
constexpr uint64_t kRunTimeStringBytes = 64;

const Type* checkStr(BuiltinCall& c) {
  const Type* p = c.args[0];
  // An integer is an address too: uprobe arguments are plain 64-bit registers.
  if (!(p->isError() || p->isPointer() || p->kind == TypeKind::Array ||
        p->kind == TypeKind::String || p->kind == TypeKind::Int)) {
    return c.badArgument(0, "a pointer or a char array");
  }
  if (c.args.size() >= 2) {
    if (!(c.args[1]->isInteger() || c.args[1]->isError())) return c.badArgument(1, "a length");
    auto bytes = c.lengthBound(1, kMaxStringBytes, kRunTimeStringBytes);
    if (!bytes) return c.types.error();
    // A run-time length counts characters: room for the NUL after them.
    if (c.runTimeLength(1)) c.operands = {static_cast<int64_t>(*bytes + 1), 1};
    else c.operands.push_back(static_cast<int64_t>(*bytes));
  }
  return c.types.string();
}

FieldShape strField(const std::vector<const Type*>&, const std::vector<int64_t>& operands) {
  return {FieldKind::String, operands.empty() ? 0 : static_cast<uint32_t>(operands[0])};
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

/// The bytes of an address `ntop` prints: 4 (IPv4) or 16 (IPv6); 0 when neither.
uint32_t addressBytes(const Type* a) {
  if (a->kind == TypeKind::Int) return a->size <= 4 ? 4 : 0;
  if (a->kind == TypeKind::Array || a->isRecord()) return a->size == 4 || a->size == 16 ? a->size : 0;
  return 0;
}

const Type* checkNtop(BuiltinCall& c) {
  if (c.args.size() == 2) {
    // ntop(family, addr), as bpftrace has it: the family (AF_INET6, else IPv4) chooses
    // when the event happens; `addr` points at the address, or is an IPv4 one.
    if (!(c.args[0]->isInteger() || c.args[0]->isError())) {
      return c.badArgument(0, "an address family (AF_INET 2, AF_INET6 10)");
    }
    const Type* a = c.args[1];
    if (!(a->isError() || a->isPointer() || addressBytes(a) != 0)) {
      return c.badArgument(1, "a pointer to an address, or an IPv4 address (a 32-bit integer)");
    }
    if ((a->kind == TypeKind::Array || a->isRecord()) && a->size < 16) {
      // An AF_INET6 event would read 16 bytes of it: 12 past its end.
      return c.badArgument(1, "a pointer to an address, an IPv4 address (a 32-bit integer), or "
                              "16 bytes that can hold either (4 bytes hold an IPv4 address only: "
                              "`ntop(x)`)");
    }
    return c.types.string();
  }
  const Type* a = c.args[0];
  if (!a->isError() && addressBytes(a) == 0) {
    return c.badArgument(0, "an IPv4 address (a 32-bit integer) or an IPv6 address "
                            "(16 bytes, such as `struct in6_addr`)");
  }
  return c.types.string();
}

FieldShape ntopField(const std::vector<const Type*>& args, const std::vector<int64_t>&) {
  if (args.size() == 2) return {FieldKind::IpAddress, plan::kIpAddressBytes};
  bool v6 = !args.empty() && addressBytes(args[0]) == 16;
  return v6 ? FieldShape{FieldKind::Ipv6, 16} : FieldShape{FieldKind::Ipv4, 8};
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
  // Each conversion takes the next argument (engine/decoder.cpp formats them): they must be
  // ones it knows, as many as there are arguments.
  const std::string& format = ast::as<ast::StringLiteral>(*c.call.args[0]).value;
  size_t conversions = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') continue;
    size_t j = i + 1;
    while (j < format.size() && std::strchr("-+ #0123456789.l", format[j])) ++j;
    if (j == format.size() || (format[j] != '%' && !std::strchr("diuxXocs", format[j]))) {
      std::string seen = format.substr(i, j + 1 - i);
      c.diags.report(DiagKind::TypeMismatch, c.call.args[0]->range,
                     j == format.size() ? fmt::format("`{}` ends the format without a conversion", seen)
                                        : fmt::format("`{}` is no conversion `fmt` knows", seen))
          .note("`fmt` converts with %d, %i, %u, %x, %X, %o, %c and %s (flags and widths as C's "
                "printf: `%-8s`, `%08x`); `%%` is a percent sign");
      return c.types.error();
    }
    if (format[j] != '%') ++conversions;
    i = j;
  }
  size_t given = c.call.args.size() - 1;
  if (conversions != given) {
    c.diags.report(DiagKind::WrongArgumentCount, c.call.range,
                   fmt::format("the format has {} conversion{} and {} argument{} follow{} it", conversions,
                               conversions == 1 ? "" : "s", given, given == 1 ? "" : "s", given == 1 ? "s" : ""))
        .note("each conversion (`%d`, `%s`, ...) prints the next argument; `%%` is a percent sign");
    return c.types.error();
  }
  return c.types.string();
}

/// `kaddr("init_task")`: the symbol's address, found when the query is compiled.
const Type* checkKaddr(BuiltinCall& c) {
  if (!c.args[0]->isError() && c.args[0]->kind != TypeKind::String) {
    return c.badArgument(0, "a kernel symbol's name");
  }
  const ast::StringLiteral* name = c.literalString(0, "the symbol's name", "kaddr(\"vfs_read\")");
  if (!name) return c.types.error();
  Result<std::optional<uint64_t>> address = c.kernel.symbolAddress(name->value);
  if (!address) {
    c.diags.report(DiagKind::NotAvailableHere, c.call.range,
                   fmt::format("`kaddr` cannot find kernel symbols here: {}", address.error().message))
        .note("kq reads symbol addresses from /proc/kallsyms, as root");
    return c.types.error();
  }
  if (!*address) {
    Diagnostic& diag = c.diags.report(DiagKind::UnknownSymbol, c.call.args[0]->range,
                                      fmt::format("the kernel has no symbol `{}`", name->value));
    if (auto close = closestName(name->value, c.kernel.symbolNames())) {
      diag.note(fmt::format("did you mean `{}`?", *close));
    }
    return c.types.error();
  }
  c.operands.push_back(static_cast<int64_t>(**address));
  return c.types.u64();
}

template <FieldKind Kind>
FieldShape shown(const std::vector<const Type*>&, const std::vector<int64_t>&) {
  return {Kind, Kind == FieldKind::Format ? 0u : 8u};
}

}  // namespace

void addFormatFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      {"str", BuiltinFn::Str, 1, 3, checkStr, "str(p[, n[, max]])",
       "the string `p` points at (kernel or user memory, as `p` came), at most n bytes", strField},
      // These change only how a value prints: the text exists when the event prints, so
      // they stand where a column does (`hex(c ? a : b)`, not `c ? hex(a) : hex(b)`).
      placed({"hex", BuiltinFn::Hex, 1, 1, checkInteger, "hex(x)", "`x` printed in hexadecimal",
              shown<FieldKind::Hex>},
             Placement::Column),
      placed({"errno", BuiltinFn::Errno, 1, 1, checkInteger, "errno(x)",
              "a negative errno printed by name (`-ENOENT`)", shown<FieldKind::Errno>},
             Placement::Column),
      placed({"ntop", BuiltinFn::Ntop, 1, 2, checkNtop, "ntop([family, ]addr)",
              "an IPv4 or IPv6 address printed as text", ntopField},
             Placement::Column),
      placed({"ksym", BuiltinFn::Ksym, 1, 1, checkAddress, "ksym(addr)",
              "a kernel address printed as its symbol", shown<FieldKind::Symbol>},
             Placement::Column),
      placed({"usym", BuiltinFn::Usym, 1, 1, checkAddress, "usym(addr)",
              "an address in the event's process printed as its symbol", shown<FieldKind::UserSymbol>},
             Placement::Column),
      {"kaddr", BuiltinFn::Kaddr, 1, 1, checkKaddr, "kaddr(\"symbol\")",
       "the address of a kernel symbol (a function or data), found when the query is compiled",
       shown<FieldKind::Hex>},
      {"fmt", BuiltinFn::Fmt, 1, 16, checkFmt, "fmt(\"format\", x...)",
       "its arguments formatted as printf formats them, when the event prints",
       shown<FieldKind::Format>},
  });
}

}  // namespace kq::sema
