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
