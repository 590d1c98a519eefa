// Aggregates, kept in BPF maps and printed as tables: count, sum, avg, min, max, hist,
// lhist, top.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

const Type* checkCount(BuiltinCall& c) { return c.types.u64(); }

const Type* checkNumeric(BuiltinCall& c) {
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!(c.args[i]->isInteger() || c.args[i]->isError())) return c.badArgument(i, "an integer");
  }
  return c.types.s64();
}

const Type* checkLhist(BuiltinCall& c) {
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!(c.args[i]->isInteger() || c.args[i]->isError())) return c.badArgument(i, "an integer");
  }
  for (size_t i = 1; i < c.call.args.size(); ++i) {
    if (c.call.args[i]->kind != ast::ExprKind::Integer) {
      c.diags.report(DiagKind::TypeMismatch, c.call.args[i]->range,
                     "`lhist` needs its bounds and step as integer literals");
      return c.types.error();
    }
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
  return c.types.u64();
}

}  // namespace

void addAggregateFunctions(std::vector<BuiltinFunction>& out) {
  out.insert(out.end(), {
      {"count", 0, 0, true, checkCount, "count()"},
      {"sum", 1, 1, true, checkNumeric, "sum(x)"},
      {"avg", 1, 1, true, checkNumeric, "avg(x)"},
      {"min", 1, 1, true, checkNumeric, "min(x)"},
      {"max", 1, 1, true, checkNumeric, "max(x)"},
      {"hist", 1, 1, true, checkNumeric, "hist(x)"},
      {"lhist", 4, 4, true, checkLhist, "lhist(x, lo, hi, step)"},
      {"top", 1, 1, true, checkTop, "top(n)"},
  });
}

}  // namespace kq::sema
