// kq's builtin names and functions, as tables of small entries, one file per family:
// variables.cpp (pid, comm, ...), functions.cpp (str, hex, fmt, ...), aggregates.cpp
// (count, sum, hist, ...). The type checker looks names up here and calls `check`.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostic.h"
#include "compiler/sema/types.h"

namespace kq::sema {

/// What a builtin variable needs from its probe.
enum class Needs : uint8_t {
  Nothing,
  Exit,      // only at function exit: `duration`
  Function,  // only where a function is traced: `func`
};

struct BuiltinVariable {
  std::string_view name;
  const Type* (*type)(TypeTable& types);
  Needs needs;
  std::string_view doc;
};

/// A call being checked: its arguments' types are known; `check` returns the call's type,
/// or reports a diagnostic and returns the error type.
struct BuiltinCall {
  const ast::Call& call;
  std::vector<const Type*> args;
  TypeTable& types;
  Diagnostics& diags;

  /// Reports that argument `i` has the wrong type; `wanted` says what it should be.
  const Type* badArgument(size_t i, std::string_view wanted);
};

struct BuiltinFunction {
  std::string_view name;
  size_t min_args;
  size_t max_args;
  bool aggregate;
  const Type* (*check)(BuiltinCall& call);
  std::string_view signature;  // for messages and docs: `str(p[, n])`
};

const std::vector<BuiltinVariable>& builtinVariables();
const std::vector<BuiltinFunction>& builtinFunctions();

/// Tables of each family, gathered by the two functions above.
void addProcessVariables(std::vector<BuiltinVariable>& out);
void addFormatFunctions(std::vector<BuiltinFunction>& out);
void addNetFunctions(std::vector<BuiltinFunction>& out);
void addAggregateFunctions(std::vector<BuiltinFunction>& out);

}  // namespace kq::sema
