#include "compiler/ast/compare.h"

namespace kq::ast {
namespace {

bool sameType(const TypeName& a, const TypeName& b) {
  return a.tag == b.tag && a.name == b.name && a.pointer_depth == b.pointer_depth;
}

bool sameConstant(const TableConstant& a, const TableConstant& b) {
  return a.is_string == b.is_string && a.integer == b.integer && a.string == b.string;
}

bool sameTable(const TableLiteral& a, const TableLiteral& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    if (!sameConstant(a.entries[i].key, b.entries[i].key) ||
        !sameConstant(a.entries[i].value, b.entries[i].value)) {
      return false;
    }
  }
  return true;
}

bool sameCall(const Call& a, const Call& b) {
  if (a.callee != b.callee || a.args.size() != b.args.size()) return false;
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (!sameExpr(*a.args[i], *b.args[i])) return false;
  }
  return true;
}

}  // namespace

bool sameExpr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ExprKind::Integer: return as<IntegerLiteral>(a).value == as<IntegerLiteral>(b).value;
    case ExprKind::String: return as<StringLiteral>(a).value == as<StringLiteral>(b).value;
    case ExprKind::Bool: return as<BoolLiteral>(a).value == as<BoolLiteral>(b).value;
    case ExprKind::Identifier: return as<Identifier>(a).name == as<Identifier>(b).name;
    case ExprKind::ReturnValue: return true;
    case ExprKind::Call: return sameCall(as<Call>(a), as<Call>(b));
    case ExprKind::Member: {
      const auto& x = as<Member>(a);
      const auto& y = as<Member>(b);
      return x.arrow == y.arrow && x.member == y.member && sameExpr(*x.base, *y.base);
    }
    case ExprKind::Index: {
      const auto& x = as<Index>(a);
      const auto& y = as<Index>(b);
      return sameExpr(*x.base, *y.base) && sameExpr(*x.index, *y.index);
    }
    case ExprKind::Unary: {
      const auto& x = as<Unary>(a);
      const auto& y = as<Unary>(b);
      return x.op == y.op && sameExpr(*x.operand, *y.operand);
    }
    case ExprKind::Binary: {
      const auto& x = as<Binary>(a);
      const auto& y = as<Binary>(b);
      return x.op == y.op && sameExpr(*x.lhs, *y.lhs) && sameExpr(*x.rhs, *y.rhs);
    }
    case ExprKind::Conditional: {
      const auto& x = as<Conditional>(a);
      const auto& y = as<Conditional>(b);
      return sameExpr(*x.cond, *y.cond) && sameExpr(*x.then, *y.then) &&
             sameExpr(*x.otherwise, *y.otherwise);
    }
    case ExprKind::Cast: {
      const auto& x = as<Cast>(a);
      const auto& y = as<Cast>(b);
      return sameType(x.type, y.type) && sameExpr(*x.operand, *y.operand);
    }
    case ExprKind::Table: return sameTable(as<TableLiteral>(a), as<TableLiteral>(b));
  }
  return false;
}

}  // namespace kq::ast
