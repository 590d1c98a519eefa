// Structural equality of expressions: `a->b + 1` written twice, with any spacing or
// comments between tokens, is the same expression. Used where kq matches what a user wrote
// in two places (a `select` item naming a `group by` key).
#pragma once

#include "compiler/ast/ast.h"

namespace kq::ast {

/// Whether `a` and `b` are the same expression, ignoring where they were written.
bool sameExpr(const Expr& a, const Expr& b);

}  // namespace kq::ast
