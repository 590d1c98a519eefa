// Which values count nanoseconds of time: `duration` (a function's time from entry to
// exit) and `time - x.time` (a join's time between two events). Their aggregates are shown
// with that unit (`hist(duration)`'s buckets as times; kq serve's seconds).
#pragma once

#include "compiler/ast/ast.h"

namespace kq::sema {

inline bool countsNanoseconds(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Identifier) return ast::as<ast::Identifier>(e).name == "duration";
  if (e.kind != ast::ExprKind::Binary) return false;
  const auto& b = ast::as<ast::Binary>(e);
  return b.op == ast::BinaryOp::Sub && b.lhs->kind == ast::ExprKind::Identifier &&
         ast::as<ast::Identifier>(*b.lhs).name == "time";
}

}  // namespace kq::sema
