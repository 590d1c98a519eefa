// Aggregates, kept in BPF maps and printed as tables: count, sum, avg, min, max, hist,
// lhist, top. Literal operands (lhist's bounds, top's n) are checked and evaluated here, so
// code generation only reads them.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

using plan::AggregateKind;

/// The most buckets an `lhist` keeps (its map value holds 8 bytes per bucket).
constexpr int64_t kMaxLhistBuckets = 1000;

const Type* checkCount(BuiltinCall& c) { return c.types.u64(); }

const Type* checkNumeric(BuiltinCall& c) {
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!(c.args[i]->isInteger() || c.args[i]->isError())) return c.badArgument(i, "an integer");
  }
  return c.types.s64();
}

/// A literal integer operand, negative ones included (`-10` parses as a negation).
std::optional<int64_t> literal(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Integer) return static_cast<int64_t>(ast::as<ast::IntegerLiteral>(e).value);
  if (e.kind == ast::ExprKind::Unary) {
    const auto& u = ast::as<ast::Unary>(e);
    if (u.op == ast::UnaryOp::Negate && u.operand->kind == ast::ExprKind::Integer) {
      return -static_cast<int64_t>(ast::as<ast::IntegerLiteral>(*u.operand).value);
    }
  }
  return std::nullopt;
}

const Type* checkLhist(BuiltinCall& c) {
  const Type* numeric = checkNumeric(c);
  if (numeric->isError()) return numeric;
  for (size_t i = 1; i < c.call.args.size(); ++i) {
    std::optional<int64_t> v = literal(*c.call.args[i]);
    if (!v) {
      c.diags.report(DiagKind::TypeMismatch, c.call.args[i]->range,
                     "`lhist` needs its bounds and step as integer literals");
      return c.types.error();
    }
    c.operands.push_back(*v);
  }
  int64_t lo = c.operands[0], hi = c.operands[1], step = c.operands[2];
  if (step <= 0 || hi <= lo || (hi - lo) / step > kMaxLhistBuckets) {
    c.diags.report(DiagKind::ValueOutOfRange, c.call.range,
                   "`lhist` needs lo < hi and a step giving at most 1000 buckets");
    return c.types.error();
  }
  return c.types.s64();
}

/// `top(n)`: n is how many groups to keep, a literal from 1 to 10000.
const Type* checkTop(BuiltinCall& c) {
  const ast::Expr& n = *c.call.args[0];
  if (n.kind != ast::ExprKind::Integer) {
    c.diags.report(DiagKind::TypeMismatch, n.range,
                   "`top` needs how many groups to keep as an integer literal, as in `top(10)`");
    return c.types.error();
  }
  uint64_t value = ast::as<ast::IntegerLiteral>(n).value;
  if (value < 1 || value > 10000) {
    c.diags.report(DiagKind::ValueOutOfRange, n.range,
                   "`top` keeps from 1 to 10000 groups");
    return c.types.error();
  }
  c.operands.push_back(static_cast<int64_t>(value));
  return c.types.u64();
}

}  // namespace

void addAggregateFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      {"count", BuiltinFn::Count, 0, 0, checkCount, "count()", "events in the group", nullptr,
       AggregateKind::Count},
      {"sum", BuiltinFn::Sum, 1, 1, checkNumeric, "sum(x)", "the sum of `x`", nullptr,
       AggregateKind::Sum},
      {"avg", BuiltinFn::Avg, 1, 1, checkNumeric, "avg(x)", "the mean of `x`", nullptr,
       AggregateKind::Avg},
      {"min", BuiltinFn::Min, 1, 1, checkNumeric, "min(x)", "the smallest `x`", nullptr,
       AggregateKind::Min},
      {"max", BuiltinFn::Max, 1, 1, checkNumeric, "max(x)", "the largest `x`", nullptr,
       AggregateKind::Max},
      {"hist", BuiltinFn::Hist, 1, 1, checkNumeric, "hist(x)",
       "a histogram of `x` in power-of-two buckets", nullptr, AggregateKind::Hist},
      {"lhist", BuiltinFn::Lhist, 4, 4, checkLhist, "lhist(x, lo, hi, step)",
       "a histogram of `x` in linear buckets from `lo` to `hi`", nullptr, AggregateKind::Lhist},
      {"top", BuiltinFn::Top, 1, 1, checkTop, "top(n)",
       "a count that keeps the n groups with the most events", nullptr, AggregateKind::Top},
  });
}

}  // namespace kq::sema
