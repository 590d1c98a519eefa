#include "compiler/sema/builtins/builtins.h"

#include <fmt/format.h>

namespace kq::sema {

const Type* BuiltinCall::badArgument(size_t i, std::string_view wanted) {
  if (args[i]->isError()) return types.error();
  diags.report(DiagKind::TypeMismatch, call.args[i]->range,
               fmt::format("`{}` takes {} as argument {}, not `{}`", call.callee, wanted, i + 1,
                           args[i]->spelling));
  return types.error();
}

const ast::StringLiteral* BuiltinCall::literalString(size_t i, std::string_view what,
                                                     std::string_view example) {
  if (args[i]->isError()) return nullptr;
  const ast::Expr& arg = *call.args[i];
  if (arg.kind != ast::ExprKind::String) {
    diags.report(DiagKind::TypeMismatch, arg.range,
                 fmt::format("`{}` needs {} as a string literal, as in `{}`", call.callee, what, example));
    return nullptr;
  }
  return &ast::as<ast::StringLiteral>(arg);
}

std::optional<uint64_t> BuiltinCall::lengthBound(size_t length, uint64_t most, uint64_t fallback) {
  auto literal = [&](const ast::Expr& e, std::string_view what) -> std::optional<uint64_t> {
    uint64_t v = ast::as<ast::IntegerLiteral>(e).value;
    if (v >= 1 && v <= most) return v;
    diags.report(DiagKind::ValueOutOfRange, e.range,
                 fmt::format("`{}`{} from 1 to {} bytes, not {}", call.callee, what, most, v));
    return std::nullopt;
  };
  const ast::Expr& n = *call.args[length];
  // `str(buf, -1)`: a negative constant is no length (at run time it would read nothing).
  if (n.kind == ast::ExprKind::Unary && ast::as<ast::Unary>(n).op == ast::UnaryOp::Negate &&
      ast::as<ast::Unary>(n).operand->kind == ast::ExprKind::Integer) {
    diags.report(DiagKind::ValueOutOfRange, n.range,
                 fmt::format("`{}` reads from 1 to {} bytes, not -{}", call.callee, most,
                             ast::as<ast::IntegerLiteral>(*ast::as<ast::Unary>(n).operand).value));
    return std::nullopt;
  }
  bool has_max = call.args.size() > length + 1;
  if (!runTimeLength(length)) {
    if (has_max) {
      diags.report(DiagKind::WrongArgumentCount, call.args[length + 1]->range,
                   fmt::format("a literal length is its own maximum: `{}` takes one only after a length "
                               "known as the event happens, as in `{}(p, len, 256)`", call.callee, call.callee));
      return std::nullopt;
    }
    return literal(n, " reads");
  }
  if (!has_max) return fallback;
  const ast::Expr& max = *call.args[length + 1];
  if (max.kind != ast::ExprKind::Integer) {
    diags.report(DiagKind::TypeMismatch, max.range,
                 fmt::format("`{}` needs its maximum as an integer literal, as in `{}(p, len, 256)`",
                             call.callee, call.callee));
    return std::nullopt;
  }
  return literal(max, "'s maximum is");
}

const std::vector<BuiltinVariable>& builtinVariables() {
  static const std::vector<BuiltinVariable> table = [] {
    std::vector<BuiltinVariable> out;
    addProcessVariables(out);
    return out;
  }();
  return table;
}

const std::vector<BuiltinFunction>& builtinFunctions() {
  static const std::vector<BuiltinFunction> table = [] {
    std::vector<BuiltinFunction> out;
    addFormatFunctions(out);
    addPrintedFunctions(out);
    addNameFunctions(out);
    addMacroFunctions(out);
    addNetFunctions(out);
    addProbeFunctions(out);
    addAggregateFunctions(out);
    return out;
  }();
  return table;
}

}  // namespace kq::sema
