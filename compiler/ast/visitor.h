// CRTP visitor over expressions with default traversal: a pass overrides only the
// `visitX` functions for the nodes it cares about; the others visit their children.
//
//   struct CountCalls : ExprVisitor<CountCalls> {
//     int calls = 0;
//     void visitCall(const Call& call) { ++calls; visitChildren(call); }
//   };
#pragma once

#include "compiler/ast/ast.h"

namespace kq::ast {

template <typename Derived>
class ExprVisitor {
 public:
  void visit(const Expr& expr) {
    Derived& self = static_cast<Derived&>(*this);
    switch (expr.kind) {
      case ExprKind::Integer: return self.visitInteger(as<IntegerLiteral>(expr));
      case ExprKind::String: return self.visitString(as<StringLiteral>(expr));
      case ExprKind::Bool: return self.visitBool(as<BoolLiteral>(expr));
      case ExprKind::Identifier: return self.visitIdentifier(as<Identifier>(expr));
      case ExprKind::ReturnValue: return self.visitReturnValue(as<ReturnValue>(expr));
      case ExprKind::Call: return self.visitCall(as<Call>(expr));
      case ExprKind::Member: return self.visitMember(as<Member>(expr));
      case ExprKind::Index: return self.visitIndex(as<Index>(expr));
      case ExprKind::Unary: return self.visitUnary(as<Unary>(expr));
      case ExprKind::Binary: return self.visitBinary(as<Binary>(expr));
      case ExprKind::Conditional: return self.visitConditional(as<Conditional>(expr));
      case ExprKind::Cast: return self.visitCast(as<Cast>(expr));
      case ExprKind::Table: return self.visitTable(as<TableLiteral>(expr));
    }
  }

  void visitInteger(const IntegerLiteral&) {}
  void visitString(const StringLiteral&) {}
  void visitBool(const BoolLiteral&) {}
  void visitIdentifier(const Identifier&) {}
  void visitReturnValue(const ReturnValue&) {}
  void visitCall(const Call& call) { visitChildren(call); }
  void visitMember(const Member& member) { visitChildren(member); }
  void visitIndex(const Index& index) { visitChildren(index); }
  void visitUnary(const Unary& unary) { visitChildren(unary); }
  void visitBinary(const Binary& binary) { visitChildren(binary); }
  void visitConditional(const Conditional& cond) { visitChildren(cond); }
  void visitCast(const Cast& cast) { visitChildren(cast); }
  void visitTable(const TableLiteral&) {}  // its keys and values are constants, not expressions

 protected:
  void visitChildren(const Call& call) {
    for (const ExprPtr& arg : call.args) visit(*arg);
  }
  void visitChildren(const Member& member) { visit(*member.base); }
  void visitChildren(const Index& index) {
    visit(*index.base);
    visit(*index.index);
  }
  void visitChildren(const Unary& unary) { visit(*unary.operand); }
  void visitChildren(const Binary& binary) {
    visit(*binary.lhs);
    visit(*binary.rhs);
  }
  void visitChildren(const Conditional& cond) {
    visit(*cond.cond);
    visit(*cond.then);
    visit(*cond.otherwise);
  }
  void visitChildren(const Cast& cast) { visit(*cast.operand); }
};

}  // namespace kq::ast
