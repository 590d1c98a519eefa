// Builtin functions whose value is text made when an event prints, as bpftrace's: `cat`
// (a file's contents, read then), `join` (a NULL-terminated array of strings, read in the
// kernel), `buf` (raw bytes), `strftime` (a time as wall-clock text). They are whole columns
// (their Placement): nothing computes with their text in the kernel.
#include "compiler/sema/builtins/builtins.h"

#include <fmt/format.h>

namespace kq::sema {
namespace {

using plan::FieldKind;

/// The most bytes `buf(p, n)` keeps.
constexpr uint64_t kMaxBufBytes = 1024;
/// What `buf(p, n)` keeps of a length known only as the event happens, with no maximum
/// given: as many as bpftrace's default.
constexpr uint64_t kRunTimeBufBytes = 64;

const Type* checkCat(BuiltinCall& c) {
  if (!c.args[0]->isError() && c.args[0]->kind != TypeKind::String) {
    return c.badArgument(0, "a file's path");
  }
  const ast::StringLiteral* path = c.literalString(0, "the file's path", "cat(\"/proc/loadavg\")");
  if (!path) return c.types.error();
  if (path->value.empty()) {
    c.diags.report(DiagKind::ValueOutOfRange, c.call.args[0]->range, "`cat` needs a file's path, not \"\"");
    return c.types.error();
  }
  return c.types.string();
}

/// What `join` reads: an array of string pointers, where it is (a pointer to it, an array
/// member) or as a plain address (uprobe arguments).
bool isStringArray(const Type* t) {
  if (t->isError() || t->kind == TypeKind::Int) return true;
  if (t->isPointer() || t->kind == TypeKind::Array) {
    const Type* element = t->element;
    return element && (element->isPointer() || element->kind == TypeKind::Void);
  }
  return false;
}

const Type* checkJoin(BuiltinCall& c) {
  if (!isStringArray(c.args[0])) {
    return c.badArgument(0, "a NULL-terminated array of strings (`char **`, as `argv`)");
  }
  if (c.args.size() >= 2) {
    if (!c.args[1]->isError() && c.args[1]->kind != TypeKind::String) {
      return c.badArgument(1, "a separator");
    }
    if (!c.literalString(1, "its separator", "join(argv, \",\")")) return c.types.error();
  }
  if (c.args.size() == 3) {
    // The bytes kept of each string, its NUL included.
    const ast::Expr& n = *c.call.args[2];
    if (n.kind != ast::ExprKind::Integer) {
      c.diags.report(DiagKind::TypeMismatch, n.range,
                     "`join` needs the bytes of each string as an integer literal, as in `join(argv, \" \", 256)`");
      return c.types.error();
    }
    uint64_t bytes = ast::as<ast::IntegerLiteral>(n).value;
    if (bytes < 2 || bytes > plan::kJoinMaxArgBytes) {
      c.diags.report(DiagKind::ValueOutOfRange, n.range,
                     fmt::format("`join` keeps from 2 to {} bytes of each string, not {}", plan::kJoinMaxArgBytes, bytes));
      return c.types.error();
    }
    c.operands.push_back(static_cast<int64_t>(bytes));
  }
  return c.types.string();
}

FieldShape joinField(const std::vector<const Type*>&, const std::vector<int64_t>& operands) {
  uint32_t bytes = operands.empty() ? plan::kJoinArgBytes : static_cast<uint32_t>(operands[0]);
  return {FieldKind::StringList, 8 + plan::kJoinArgs * bytes};
}

/// Bytes a value holds in place (an array, a struct), which `buf` reads whole by default.
std::optional<uint64_t> bytesInPlace(const Type* t) {
  if (t->kind == TypeKind::Array || t->isRecord()) return t->size;
  return std::nullopt;
}

const Type* checkBuf(BuiltinCall& c) {
  const Type* p = c.args[0];
  if (!(p->isError() || p->isPointer() || p->kind == TypeKind::Int || p->kind == TypeKind::String ||
        p->kind == TypeKind::Array || p->isRecord())) {
    return c.badArgument(0, "a pointer, an array or a struct");
  }
  if (p->isError()) return c.types.error();
  std::optional<uint64_t> whole = bytesInPlace(p);
  uint64_t bytes = 0;
  SourceRange at = c.call.range;
  if (c.args.size() >= 2) {
    if (!(c.args[1]->isInteger() || c.args[1]->isError())) return c.badArgument(1, "a length");
    auto bound = c.lengthBound(1, kMaxBufBytes, kRunTimeBufBytes);
    if (!bound) return c.types.error();
    bytes = *bound;
    at = c.call.args[c.runTimeLength(1) && c.args.size() == 3 ? 2 : 1]->range;
    // A length known as the event happens: the bytes it says, up to the bound.
    if (c.runTimeLength(1)) {
      if (whole) bytes = std::min(bytes, *whole);
      c.operands = {static_cast<int64_t>(bytes), 1};
      return c.types.string();
    }
  } else if (whole) {
    bytes = *whole;
  } else {
    c.diags.report(DiagKind::WrongArgumentCount, c.call.range,
                   fmt::format("`buf` needs how many bytes to read from a `{}`, as in `buf(p, 16)`",
                               p->spelling))
        .note("only an array or a struct has a length of its own");
    return c.types.error();
  }
  if (bytes < 1 || bytes > kMaxBufBytes) {
    c.diags.report(DiagKind::ValueOutOfRange, at,
                   fmt::format("`buf` reads from 1 to {} bytes, not {}", kMaxBufBytes, bytes));
    return c.types.error();
  }
  if (whole && bytes > *whole) {
    c.diags.report(DiagKind::ValueOutOfRange, at,
                   fmt::format("a `{}` has {} bytes; `buf` cannot read {} of it", p->spelling, *whole,
                               bytes));
    return c.types.error();
  }
  c.operands.push_back(static_cast<int64_t>(bytes));
  return c.types.string();
}

const Type* checkStrftime(BuiltinCall& c) {
  if (!c.args[0]->isError() && c.args[0]->kind != TypeKind::String) {
    return c.badArgument(0, "a format string");
  }
  if (!(c.args[1]->isInteger() || c.args[1]->isError())) {
    return c.badArgument(1, "a time in nanoseconds (such as `time`)");
  }
  if (!c.literalString(0, "its format", "strftime(\"%H:%M:%S\", time)")) return c.types.error();
  return c.types.string();
}

template <FieldKind Kind, uint32_t Bytes>
FieldShape shown(const std::vector<const Type*>&, const std::vector<int64_t>&) {
  return {Kind, Bytes};
}

FieldShape bufField(const std::vector<const Type*>&, const std::vector<int64_t>& operands) {
  uint32_t bytes = operands.empty() ? 1u : static_cast<uint32_t>(operands[0]);
  // A run-time length: the length, then the bytes.
  if (operands.size() == 2) return {FieldKind::SizedBuffer, 8 + bytes};
  return {FieldKind::Buffer, bytes};
}

}  // namespace

void addPrintedFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      placed({"cat", BuiltinFn::Cat, 1, 1, checkCat, "cat(\"path\")",
              "the contents of a file, read when the event prints (without its last newline)",
              shown<FieldKind::File, 0>},
             Placement::Printed),
      placed({"join", BuiltinFn::Join, 1, 3, checkJoin, "join(argv[, \"separator\"[, bytes]])",
              "a NULL-terminated array of strings, joined by spaces or the separator (each cut at `bytes`, 64 by default)",
              joinField},
             Placement::Column),
      placed({"buf", BuiltinFn::Buf, 1, 3, checkBuf, "buf(p[, n[, max]])",
              "n bytes from p, printable ASCII as is and others as `\\xNN`", bufField},
             Placement::Column),
      placed({"strftime", BuiltinFn::Strftime, 2, 2, checkStrftime, "strftime(\"format\", ns)",
              "a time such as `time` as local wall-clock text, by C's strftime (`%f`: microseconds)",
              shown<FieldKind::WallTime, 8>},
             Placement::Column),
  });
}

}  // namespace kq::sema
