// What the checker says about a query still being typed, for completion: the names a probe
// brings into scope, and the members of the type of an expression in that scope. Each asks
// sema about a small query made from the pieces already typed (`trace PROBE select EXPR`,
// after the session's declarations), so what completes is what checks.
#pragma once

#include <string>
#include <vector>

#include "repl/completion.h"

namespace kq::repl {

/// The arguments (or tracepoint fields) `probe` brings into scope, by name; none if it does
/// not check.
std::vector<std::string> probeArguments(const CompletionContext& context, const std::string& probe);

/// The members of the struct or union that `expr` points to (`arrow`) or is, in the scope
/// of `probe`; none if it is neither or does not check.
std::vector<std::string> memberNames(const CompletionContext& context, const std::string& probe,
                                     const std::string& expr, bool arrow);

/// The `let` and `fn` names of the session's declarations and of the modules they `use`.
std::vector<std::string> declaredNames(const CompletionContext& context);

/// The stdlib's properties (its `fn`s of one typed parameter): usable bare without `use`
/// (`mark`).
std::vector<std::string> stdlibProperties();

/// The builtin variables and functions.
std::vector<std::string> builtinNames(bool variables, bool functions);

/// Of `names` (builtin variables, properties, `return`), those that check as a `select`
/// item in the scope of `probe`: no `func` on a tracepoint, no `return` without an exit,
/// no `mark` without an skb. All of them when the probe itself does not check.
std::vector<std::string> usableNames(const CompletionContext& context, const std::string& probe,
                                     const std::vector<std::string>& names);

/// Where a builtin function is called, for the ones that fit there.
struct CallPlace {
  enum Clause { Select, Where, GroupBy, Other } clause = Other;
  bool has_exit = true;         // the probe has an exit (`entry(x)`)
  bool traces_functions = true;
};

/// The builtin functions that may be called at `place`: aggregates only as `select` items,
/// column-only ones (`kstack`...) nowhere in `where`, printed-only ones never as keys.
std::vector<std::string> builtinFunctionNames(const CallPlace& place);

}  // namespace kq::repl
