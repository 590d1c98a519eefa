// The type checker on members and operators: `.` and `->`, indexing, unary and binary
// operators (with C's arithmetic conversions and the rules for comparisons), `?:`, casts,
// and when one type may stand for another.
#include <bpf/btf.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "compiler/ast/dump.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"
#include "compiler/sema/expr_checker.h"

namespace kq::sema {

// ---- members and indexing ----------------------------------------------------------

ExprInfo ExprChecker::member(const ast::Member& m) {
  if (!scope_.join_name.empty() && !m.arrow && m.base->kind == ast::ExprKind::Identifier &&
      ast::as<ast::Identifier>(*m.base).name == scope_.join_name) {
    // `issue.rq` in the joined event's own scope: its `rq` (`o.return`: its return value).
    if (m.member == "return") return returnValue(m);
    return identifier(ast::Identifier(m.member_range, m.member));
  }
  ExprInfo info;
  info.type = error();
  const Type* base = check(*m.base);
  if (base->isError()) return info;
  const Type* record = base;
  if (m.arrow) {
    if (base->isRecord()) {
      report(DiagKind::WrongMemberOperator, m.range,
             fmt::format("{} is a `{}`, not a pointer: write `{}.{}`", quote(*m.base),
                         base->spelling, quoteText(*m.base), m.member));
      return info;
    }
    if (!base->isRecordPointer()) {
      report(DiagKind::NotARecord, m.member_range,
             fmt::format("{} is `{}`, which has no members", quote(*m.base), base->spelling));
      return info;
    }
    record = base->element;
  } else {
    if (base->isRecordPointer()) {
      report(DiagKind::WrongMemberOperator, m.range,
             fmt::format("{} is a pointer to `{}`: write `{}->{}`", quote(*m.base),
                         base->element->spelling, quoteText(*m.base), m.member));
      return info;
    }
    if (!base->isRecord()) {
      report(DiagKind::NotARecord, m.member_range,
             fmt::format("{} is `{}`, which has no members", quote(*m.base), base->spelling));
      return info;
    }
  }
  if (record->incomplete) {
    report(DiagKind::NotARecord, m.member_range,
           fmt::format("`{}` is only declared in the kernel's BTF; its members are unknown",
                       record->spelling));
    return info;
  }
  auto path = ctx_.types.findMember(record, m.member);
  if (!path) {
    Diagnostic& diag = report(DiagKind::NoSuchMember, m.member_range,
                              fmt::format("`{}` has no member `{}`", record->spelling, m.member));
    std::vector<std::string> names = ctx_.types.memberNames(record);
    if (auto close = closestName(m.member, {names.begin(), names.end()})) {
      diag.note(fmt::format("did you mean `{}`?", *close));
    }
    return info;
  }
  if (path->bitfield_bits != 0 && record->btf.file->user_space) {
    report(DiagKind::Unsupported, m.member_range,
           fmt::format("`{}` is a bitfield of a C header's type: kq reads the bitfields of "
                       "the kernel's types only", m.member));
    return info;
  }
  info.type = path->type;
  info.member = std::move(*path);
  return info;
}

std::string ExprChecker::quoteText(const ast::Expr& e) const {
  std::string q = quote(e);
  return q.substr(1, q.size() - 2);
}

ExprInfo ExprChecker::index(const ast::Index& ix) {
  ExprInfo info;
  info.type = error();
  const Type* base = checkTable(*ix.base);
  if (base->kind == TypeKind::Table) return lookup(ix, out_.at(ix.base.get()));
  const Type* i = check(*ix.index);
  if (!i->isError() && !i->isInteger()) {
    report(DiagKind::TypeMismatch, ix.index->range,
           fmt::format("an index must be an integer, not `{}`", i->spelling));
    return info;
  }
  if (base->isError()) return info;
  if (base->kind == TypeKind::Array && base->count > 0) {
    // A constant index past the array would read what follows it (or be refused by the
    // verifier): `comm[16]` of a `char[16]`. A flexible array (`[]`, no count) is not checked.
    std::optional<int64_t> at = foldedInteger(*ix.index);
    if (at && (*at < 0 || static_cast<uint64_t>(*at) >= base->count)) {
      report(DiagKind::TypeMismatch, ix.index->range,
             fmt::format("{} is `{}`: its indexes go from 0 to {}, not {}", quote(*ix.base), base->spelling,
                         base->count - 1, *at));
      return info;
    }
  }
  if (base->kind == TypeKind::Array || (base->isPointer() && base->element->kind != TypeKind::Void)) {
    info.type = base->element;
    return info;
  }
  report(DiagKind::TypeMismatch, ix.base->range,
         fmt::format("{} is `{}`, which cannot be indexed", quote(*ix.base), base->spelling));
  return info;
}

// ---- operators ---------------------------------------------------------------------

ExprInfo ExprChecker::unary(const ast::Unary& u) {
  ExprInfo info;
  const Type* t = check(*u.operand);
  info.constant = info_constant(*u.operand);
  info.type = error();
  if (t->isError()) return info;
  switch (u.op) {
    case ast::UnaryOp::Negate:
    case ast::UnaryOp::Plus:
    case ast::UnaryOp::BitNot:
      if (!t->isInteger()) break;
      info.type = t->kind == TypeKind::Int ? t : ctx_.types.s64();
      return info;
    case ast::UnaryOp::LogicalNot:
      if (!isTruthy(t)) break;
      info.type = ctx_.types.boolType();
      return info;
    case ast::UnaryOp::Deref:
      if (!t->isPointer() || t->element->kind == TypeKind::Void) break;
      info.constant = false;
      info.type = t->element;
      return info;
    case ast::UnaryOp::AddressOf:
      if (u.operand->kind != ast::ExprKind::Member && u.operand->kind != ast::ExprKind::Index) {
        report(DiagKind::TypeMismatch, u.range,
               fmt::format("`&` takes a member or an element, not {}", quote(*u.operand)));
        return info;
      }
      info.constant = false;
      info.type = ctx_.types.pointerTo(t);
      return info;
  }
  report(DiagKind::TypeMismatch, u.range,
         fmt::format("`{}` does not apply to {}, a `{}`", ast::spell(u.op), quote(*u.operand),
                     t->spelling));
  return info;
}

bool ExprChecker::info_constant(const ast::Expr& e) const { return out_.at(&e).constant; }

ExprInfo ExprChecker::binary(const ast::Binary& b) {
  ExprInfo info;
  info.type = error();
  using Op = ast::BinaryOp;
  if (b.op == Op::And || b.op == Op::Or) {
    const Type* l = check(*b.lhs);
    const Type* r = check(*b.rhs);
    for (auto [side, type] : {std::pair{b.lhs.get(), l}, std::pair{b.rhs.get(), r}}) {
      if (!isTruthy(type)) {
        report(DiagKind::TypeMismatch, side->range,
               fmt::format("`{}` needs conditions; {} is a `{}`", ast::spell(b.op),
                           quote(*side), type->spelling));
        return info;
      }
    }
    info.type = ctx_.types.boolType();
    info.constant = info_constant(*b.lhs) && info_constant(*b.rhs);
    return info;
  }

  const Type* l = check(*b.lhs);
  const Type* r = (isComparison(b.op) && l->kind == TypeKind::Enum &&
                   b.rhs->kind == ast::ExprKind::Identifier)
                      ? enumeratorOf(l, ast::as<ast::Identifier>(*b.rhs))
                      : check(*b.rhs);
  if (l->isError() || r->isError()) return info;
  info.constant = info_constant(*b.lhs) && info_constant(*b.rhs);
  if (auto folded = foldLookupComparison(b)) return *folded;

  if (b.op == Op::Match) {
    if (!l->isStringLike() || !r->isStringLike()) {
      report(DiagKind::TypeMismatch, b.op_range,
             fmt::format("`~` matches a string against a glob; {} is `{}` and {} is `{}`",
                         quote(*b.lhs), l->spelling, quote(*b.rhs), r->spelling));
      return info;
    }
    // The kernel side matches a literal prefix: `nginx*`, or the whole string.
    const ast::Expr& pattern = *b.rhs;
    std::string text = pattern.kind == ast::ExprKind::String
                           ? ast::as<ast::StringLiteral>(pattern).value
                           : std::string();
    size_t wildcard = text.find_first_of("*?");
    if (pattern.kind != ast::ExprKind::String ||
        (wildcard != std::string::npos && wildcard + 1 != text.size()) ||
        text.find_first_of("?[") != std::string::npos) {
      // `[` too: a character class in a glob (as a replay matches it), never a literal `[`.
      report(DiagKind::Unsupported, pattern.range,
             "kq cannot compile this glob yet: it matches a string literal with an optional "
             "`*` at its end (no `?`, no `[...]`)")
          .note("for example `comm ~ \"nginx*\"`; for several names, `comm == \"a\" or comm == \"b\"`");
      return info;
    }
    info.type = ctx_.types.boolType();
    return info;
  }
  if (isComparison(b.op)) {
    if (comparable(b, l, r)) info.type = ctx_.types.boolType();
    return info;
  }
  // Arithmetic and bit operations.
  bool additive = b.op == Op::Add || b.op == Op::Sub;
  if (additive && l->isPointer() && r->isInteger()) {
    info.type = l;
    return info;
  }
  if (b.op == Op::Add && l->isInteger() && r->isPointer()) {
    info.type = r;
    return info;
  }
  if (b.op == Op::Sub && l->isPointer() && r->isPointer()) {
    info.type = ctx_.types.s64();
    return info;
  }
  if (l->isInteger() && r->isInteger()) {
    if (!literalOperandFits(b)) return info;
    info.type = arithmetic(l, r);
    return info;
  }
  const ast::Expr& culprit = l->isInteger() ? *b.rhs : *b.lhs;
  const Type* bad = l->isInteger() ? r : l;
  report(DiagKind::TypeMismatch, culprit.range,
         fmt::format("`{}` needs integers; {} is `{}`", ast::spell(b.op), quote(culprit),
                     bad->spelling));
  return info;
}

std::optional<int64_t> ExprChecker::foldedInteger(const ast::Expr& e, int depth) const {
  using Op = ast::BinaryOp;
  if (depth > 16) return std::nullopt;
  auto fold = [&](const ast::Expr& x) { return foldedInteger(x, depth + 1); };
  switch (e.kind) {
    case ast::ExprKind::Integer: return static_cast<int64_t>(ast::as<ast::IntegerLiteral>(e).value);
    case ast::ExprKind::Unary: {
      const auto& u = ast::as<ast::Unary>(e);
      std::optional<int64_t> v = fold(*u.operand);
      if (!v) return std::nullopt;
      // In 64 bits, wrapping, as the program computes it.
      uint64_t x = static_cast<uint64_t>(*v);
      if (u.op == ast::UnaryOp::Negate) return static_cast<int64_t>(0 - x);
      if (u.op == ast::UnaryOp::Plus) return *v;
      if (u.op == ast::UnaryOp::BitNot) return static_cast<int64_t>(~x);
      return std::nullopt;
    }
    case ast::ExprKind::Binary: {
      const auto& b = ast::as<ast::Binary>(e);
      std::optional<int64_t> l = fold(*b.lhs), r = fold(*b.rhs);
      if (!l || !r) return std::nullopt;
      uint64_t x = static_cast<uint64_t>(*l), y = static_cast<uint64_t>(*r);
      switch (b.op) {
        case Op::Add: return static_cast<int64_t>(x + y);
        case Op::Sub: return static_cast<int64_t>(x - y);
        case Op::Mul: return static_cast<int64_t>(x * y);
        case Op::BitAnd: return static_cast<int64_t>(x & y);
        case Op::BitOr: return static_cast<int64_t>(x | y);
        case Op::BitXor: return static_cast<int64_t>(x ^ y);
        default: return std::nullopt;
      }
    }
    case ast::ExprKind::Identifier: {
      const ast::LetDecl* let = nullptr;
      if (auto it = out_.find(&e); it != out_.end()) {
        if (it->second.ref == Ref::Enumerator) return it->second.value;
        if (it->second.ref == Ref::Let) let = it->second.let;
      } else if (auto l = ctx_.decls.lets.find(ast::as<ast::Identifier>(e).name);
                 l != ctx_.decls.lets.end()) {
        let = l->second;  // inside a `let`'s value, which is checked in a table of its own
      }
      if (let && let->value) return fold(*let->value);
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

bool ExprChecker::literalOperandFits(const ast::Binary& b) {
  // A constant right operand the machine cannot use: BPF (like C) leaves shifts by 64 or
  // more, or by a negative count, undefined (LLVM makes them poison, and the program it
  // emits is nonsense), and a division by zero has no value.
  using Op = ast::BinaryOp;
  std::optional<int64_t> folded = foldedInteger(*b.rhs);
  if (!folded) return true;
  int64_t n = *folded;
  if ((b.op == Op::Shl || b.op == Op::Shr) && (n < 0 || n >= 64)) {
    if (n >= 64) {
      report(DiagKind::ValueOutOfRange, b.rhs->range,
             fmt::format("a shift by {} bits has no value: kq's values have 64 bits", n))
          .note("a shift count is from 0 to 63");
    } else {
      report(DiagKind::ValueOutOfRange, b.rhs->range,
             fmt::format("a shift by {} bits has no value: a shift count is from 0 to 63", n))
          .note(fmt::format("to shift the other way, write `{}` and a count from 0 to 63",
                            b.op == Op::Shl ? ">>" : "<<"));
    }
    return false;
  }
  if ((b.op == Op::Div || b.op == Op::Mod) && n == 0) {
    report(DiagKind::ValueOutOfRange, b.rhs->range,
           fmt::format("`{}` by zero has no value", ast::spell(b.op)));
    return false;
  }
  return true;
}

const Type* ExprChecker::arithmetic(const Type* l, const Type* r) {
  uint32_t size = std::max({l->size, r->size, 4u});
  bool l_signed = l->is_signed || l->kind == TypeKind::Bool;
  bool r_signed = r->is_signed || r->kind == TypeKind::Bool;
  bool is_signed = (l_signed && r_signed) || (l_signed && l->size > r->size) ||
                   (r_signed && r->size > l->size);
  return ctx_.types.integer(size, is_signed);
}

const Type* ExprChecker::enumeratorOf(const Type* enum_type, const ast::Identifier& id) {
  const ::btf_type* raw = enum_type->btf.get();
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    uint32_t off = btf_is_enum64(raw) ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off;
    if (id.name != enum_type->btf.file->btf->name(off)) continue;
    ExprInfo info;
    info.ref = Ref::Enumerator;
    info.value = btf_is_enum64(raw) ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(raw)[i]))
                                    : btf_enum(raw)[i].val;
    info.type = enum_type;
    info.constant = true;
    out_[&id] = info;
    return enum_type;
  }
  // Not one of its enumerators: an argument, a constant, or a mistake.
  bool known = ctx_.btf.findEnumerator(id.name) || ctx_.decls.lets.count(id.name);
  for (const ProbeArg& arg : args()) known = known || arg.name == id.name;
  for (const auto& p : scope_.params) known = known || p.first == id.name;
  for (const BuiltinVariable& b : builtinVariables()) known = known || b.name == id.name;
  if (known) return check(id);
  std::vector<std::string> names;
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    uint32_t off = btf_is_enum64(raw) ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off;
    names.push_back(enum_type->btf.file->btf->name(off));
  }
  Diagnostic& diag = report(DiagKind::UnknownEnumerator, id.range,
                            fmt::format("`{}` has no enumerator `{}`", enum_type->spelling, id.name));
  if (auto close = closestName(id.name, {names.begin(), names.end()})) {
    diag.note(fmt::format("did you mean `{}`?", *close));
  }
  out_[&id] = ExprInfo{error()};
  return error();
}

bool ExprChecker::comparable(const ast::Binary& b, const Type* l, const Type* r) {
  bool ordering = b.op != ast::BinaryOp::Eq && b.op != ast::BinaryOp::Ne;
  // Strings compare with strings (and char arrays or pointers, read as strings).
  if (l->kind == TypeKind::String || r->kind == TypeKind::String) {
    if (l->isStringLike() && r->isStringLike() && !ordering) return true;
    if (ordering && l->isStringLike() && r->isStringLike()) {
      report(DiagKind::TypeMismatch, b.op_range,
             fmt::format("strings compare with `==`, `!=` and `~`, not `{}`", ast::spell(b.op)));
      return false;
    }
  }
  if (l->kind == TypeKind::Enum && r->kind == TypeKind::Enum && l->btf != r->btf) {
    report(DiagKind::EnumMismatch, b.range,
           fmt::format("{} is `{}` but {} is `{}`", quote(*b.lhs), l->spelling, quote(*b.rhs),
                       r->spelling))
        .note("comparing enumerators of different enums is almost always a mistake");
    return false;
  }
  if (l->isInteger() && r->isInteger()) {
    // `mark == 0x1ffffffff`: a literal no value of the other side's unsigned type can equal.
    const ast::Expr* literal = b.rhs->kind == ast::ExprKind::Integer   ? b.rhs.get()
                               : b.lhs->kind == ast::ExprKind::Integer ? b.lhs.get()
                                                                       : nullptr;
    const Type* other = literal == b.rhs.get() ? l : r;
    if (!ordering && literal && other->kind == TypeKind::Int && !other->is_signed && other->size > 0 &&
        other->size < 8) {
      uint64_t value = ast::as<ast::IntegerLiteral>(*literal).value;
      uint64_t max = (uint64_t{1} << (8 * other->size)) - 1;
      if (value > max) {
        const ast::Expr& side = literal == b.rhs.get() ? *b.lhs : *b.rhs;
        report(DiagKind::TypeMismatch, literal->range,
               fmt::format("{} is `{}`, at most {:#x}: it is never {}", quote(side), other->spelling, max,
                           ast::as<ast::IntegerLiteral>(*literal).spelling))
            .note(b.op == ast::BinaryOp::Eq ? "so this is never true" : "so this is always true");
        return false;
      }
    }
    return true;
  }
  if (l->isPointer() && r->isPointer()) return true;
  // A pointer against 0 (NULL) or an address.
  if ((l->isPointer() && r->isInteger()) || (l->isInteger() && r->isPointer())) {
    const ast::Expr& ptr = l->isPointer() ? *b.lhs : *b.rhs;
    const Type* ptr_type = l->isPointer() ? l : r;
    const ast::Expr& other = l->isPointer() ? *b.rhs : *b.lhs;
    bool null = other.kind == ast::ExprKind::Integer && ast::as<ast::IntegerLiteral>(other).value == 0;
    if (null || !ptr_type->isRecordPointer()) return true;
    pointerToRecord(ptr, ptr_type, other, l->isPointer() ? r : l);
    return false;
  }
  if (l->isRecordPointer() || r->isRecordPointer()) {
    bool left = l->isRecordPointer();
    pointerToRecord(left ? *b.lhs : *b.rhs, left ? l : r, left ? *b.rhs : *b.lhs, left ? r : l);
    return false;
  }
  if (l->isRecord() || r->isRecord()) {
    const ast::Expr& rec = l->isRecord() ? *b.lhs : *b.rhs;
    report(DiagKind::TypeMismatch, rec.range,
           fmt::format("{} is a `{}`; compare one of its members", quote(rec),
                       (l->isRecord() ? l : r)->spelling));
    return false;
  }
  report(DiagKind::TypeMismatch, b.op_range,
         fmt::format("cannot compare {} (`{}`) with {} (`{}`)", quote(*b.lhs), l->spelling,
                     quote(*b.rhs), r->spelling));
  return false;
}

void ExprChecker::pointerToRecord(const ast::Expr& ptr, const Type* ptr_type,
                                  const ast::Expr& other, const Type* other_type) {
  Diagnostic& diag =
      report(DiagKind::TypeMismatch, ptr.range,
             fmt::format("{} is a pointer to `{}`; compare one of its members", quote(ptr),
                         ptr_type->element->spelling));
  std::vector<std::string> names = ctx_.types.memberNames(ptr_type->element);
  // `name` first (net_device, dentry, ...), then members in order; skip internal markers.
  std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return n == "name"; });
  for (const std::string& name : names) {
    if (name.rfind("__", 0) == 0) continue;
    auto path = ctx_.types.findMember(ptr_type->element, name);
    if (!path || (path->type->kind == TypeKind::Array && path->type->count == 0)) continue;
    bool fits = other_type->isStringLike() ? path->type->isStringLike()
                                           : path->type->kind == TypeKind::Int;
    if (fits) {
      diag.note(fmt::format("for example `{}->{}`", quoteText(ptr), name));
      return;
    }
  }
  (void)other;
}

ExprInfo ExprChecker::conditional(const ast::Conditional& c) {
  ExprInfo info;
  const Type* cond = check(*c.cond);
  const Type* a = check(*c.then);
  const Type* b = check(*c.otherwise);
  info.type = error();
  if (!isTruthy(cond)) {
    report(DiagKind::TypeMismatch, c.cond->range,
           fmt::format("a condition must be an integer, pointer or bool, not `{}`", cond->spelling));
    return info;
  }
  if (a->isError() || b->isError()) return info;
  if (a->isInteger() && b->isInteger()) {
    info.type = arithmetic(a, b);
  } else if ((a->isStringLike() && b->isStringLike()) || (a->isPointer() && b->isPointer())) {
    info.type = a;
  } else {
    report(DiagKind::TypeMismatch, c.range,
           fmt::format("the branches of `?:` differ: `{}` and `{}`", a->spelling, b->spelling));
  }
  return info;
}

const Type* ExprChecker::cast(const ast::Cast& c) {
  const Type* from = check(*c.operand);
  const Type* to = resolveTypeName(ctx_, c.type);
  if (from->isError() || to->isError()) return error();
  bool scalar_from = from->isInteger() || from->isPointer();
  bool scalar_to = to->isInteger() || to->isPointer();
  if (!scalar_from || !scalar_to) {
    report(DiagKind::InvalidCast, c.range,
           fmt::format("cannot cast {} from `{}` to `{}`", quote(*c.operand), from->spelling,
                       to->spelling))
        .note("casts convert between integers and pointers");
    return error();
  }
  return to;
}

bool ExprChecker::sameType(const Type* a, const Type* b) const { return sema::sameType(a, b); }


bool ExprChecker::assignable(const Type* from, const Type* to) const {
  if (sameType(from, to)) return true;
  if (from->isInteger() && to->isInteger()) return true;
  if (from->isPointer() && to->isPointer()) {
    return to->element->kind == TypeKind::Void || from->element->kind == TypeKind::Void ||
           sameType(from->element, to->element);
  }
  return from->isStringLike() && to->isStringLike();
}

}  // namespace kq::sema
