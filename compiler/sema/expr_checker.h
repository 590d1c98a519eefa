// The type checker's class and the small helpers its files share (internal to compiler/sema:
// included only by check_expr.cpp, check_names.cpp and check_operators.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"

namespace kq::sema {

/// What names mean where an expression is checked.
struct Scope {
  /// The probe target whose arguments are in scope; null in declarations.
  const ResolvedTarget* target = nullptr;
  /// A function body's parameters, bound to the types of a call's arguments.
  std::vector<std::pair<std::string, const Type*>> params;
  /// Set when the expression needs the probe to run at function exit.
  bool* at_exit = nullptr;
  /// Functions being expanded, outermost first (to catch recursion).
  std::vector<const ast::FnDecl*> calls;
  /// Whether aggregates may appear here (directly in a `select` item).
  bool aggregates_allowed = false;
  /// The stdlib module whose `fn` body this is (its other `fn`s are in scope), or null.
  const ast::Script* module = nullptr;
  /// Inside `entry(...)`: evaluated at function entry, where `return` has no value.
  bool in_entry = false;
  /// Where uses of `func` are recorded, and whether this is the query's `where`.
  FuncUse* func = nullptr;
  bool in_where = false;
  /// In a query's expressions: its joins, whose `NAME.` values are checked in their own
  /// scope (check_joins.cpp). Null in `fn` bodies and in the joined events' own scope.
  std::vector<ResolvedJoin>* joins = nullptr;
  /// In a joined event's scope: its name, so `issue.rq` means its `rq`.
  std::string_view join_name;
};

inline constexpr size_t kMaxFnDepth = 16;
/// Expansions of `fn` bodies in one program: a few small functions calling each other
/// several times would otherwise grow exponentially (16 levels of 3 calls: 43 million).
inline constexpr size_t kMaxFnExpansions = 10'000;

inline std::string quote(const SourceManager& sources, const ast::Expr& e) {
  const std::string& text = sources.file(e.range.file).text();
  std::string s = text.substr(e.range.begin, e.range.end - e.range.begin);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return "`" + s + "`";
}

inline bool isComparison(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Lt: case ast::BinaryOp::Le: case ast::BinaryOp::Gt:
    case ast::BinaryOp::Ge: case ast::BinaryOp::Eq: case ast::BinaryOp::Ne:
      return true;
    default:
      return false;
  }
}

inline bool isTruthy(const Type* t) {
  return t->isError() || t->isInteger() || t->isPointer();
}

class ExprChecker {
 public:
  ExprChecker(Context& ctx, Scope scope, ExprTable& out);

  const Type* check(const ast::Expr& e);
  /// `check`, where a table may be the value: a `let`'s, or what is indexed.
  const Type* checkTable(const ast::Expr& e);

  const ExprInfo& info(const ast::Expr& e) const;

 private:
  Diagnostic& report(DiagKind kind, SourceRange at, std::string message);
  std::string quote(const ast::Expr& e) const;
  const Type* error() const;

  // ---- names (check_names.cpp) ---------------------------------------------------------

  const std::vector<ProbeArg>& args() const;
  ExprInfo identifier(const ast::Identifier& id);
  /// Warns that a probe argument or classic tracepoint field hides the builtin of its name.
  void warnIfShadowing(const ast::Identifier& id, const ProbeArg& arg);
  static std::optional<uint32_t> argNumber(const std::string& name);
  /// `ppid`, `netns`: the current task's members the builtin reads, into `info`; false
  /// (with a diagnostic) when this kernel's BTF lacks one.
  bool findTaskMembers(const BuiltinVariable& builtin, const ast::Identifier& id, ExprInfo& info);
  void checkNeeds(const BuiltinVariable& builtin, const ast::Expr& at);
  /// Marks the probe as running at exit, or reports why `name` cannot be used here.
  bool needsExit(std::string_view name, const ast::Expr& at);
  ExprInfo returnValue(const ast::Expr& e);
  /// A bare name that is a property (`mark` for `skb->mark`) of exactly one argument.
  std::optional<ExprInfo> property(const ast::Identifier& id);
  void unknownName(const ast::Identifier& id);

  // ---- joins (check_joins.cpp) ---------------------------------------------------------

  /// Which join an expression reads only from (with constants), if any.
  std::optional<uint32_t> joinedOnly(const ast::Expr& e) const;
  /// Checks `e` in join `j`'s scope and makes it one of the values the join keeps; null
  /// when it is not a value that can be kept (then `e` is checked here, as usual).
  const Type* joined(const ast::Expr& e, uint32_t j);
  /// `issue` alone, or `foo.x` where `foo` is not a join.
  std::optional<ExprInfo> joinNameMisuse(const ast::Expr& e);

  // ---- calls (check_names.cpp) ---------------------------------------------------------

  ExprInfo call(const ast::Call& c);
  /// A call of a `use c` function: its arguments' count and types (c_declarations.cpp).
  ExprInfo cCall(const ast::Call& c, const CFunction& fn);
  static std::string countText(size_t lo, size_t hi);
  void unknownCall(const ast::Call& c);
  /// The type of a function's parameter `i`: its declared type, or (untyped) anything.
  const Type* paramType(const ast::FnDecl& fn, size_t i);
  /// Notes on `diag`, for a query that says bpftrace's `args.NAME`, that kq names the
  /// probe's arguments by themselves; false when the probe has none.
  bool bpftraceArgs(Diagnostic& diag);
  /// Checks a function's body with its parameters bound to `arg_types`, for one use.
  ExprInfo expandFn(const ast::FnDecl& fn, const ast::Expr& use, std::vector<const Type*> arg_types);
  /// Reports recursion, nesting past kMaxFnDepth or the program's expansions past
  /// kMaxFnExpansions; true when `fn` may be expanded at `use`.
  bool mayExpand(const ast::FnDecl& fn, const ast::Expr& use);

  // ---- members and indexing (check_operators.cpp) --------------------------------------

  ExprInfo member(const ast::Member& m);
  std::string quoteText(const ast::Expr& e) const;
  ExprInfo index(const ast::Index& ix);

  // ---- lookup tables (check_tables.cpp) ------------------------------------------------

  ExprInfo tableLiteral(const ast::TableLiteral& t);
  /// `caps[cap]`: a name (printed from the key), or `perms["read"]`: a number, folded.
  ExprInfo lookup(const ast::Index& ix, const ExprInfo& table);
  /// `caps[cap] == "CAP_CHOWN"` (or `!=`, `~ "CAP_NET_*"`) as a comparison of the key with
  /// the keys of that name; nothing when neither side is such a lookup against a literal.
  std::optional<ExprInfo> foldLookupComparison(const ast::Binary& b);
  /// A network namespace's inode: the builtin `netns`, or the `net` module's `dev_netns`.
  bool isNetnsInode(const ast::Expr& e);
  /// Reports a table used other than by indexing it.
  void tableNotIndexed(const ast::Expr& e, const ExprInfo& info);

  // ---- operators (check_operators.cpp) -------------------------------------------------

  ExprInfo unary(const ast::Unary& u);
  bool info_constant(const ast::Expr& e) const;
  ExprInfo binary(const ast::Binary& b);
  /// C's usual arithmetic conversions, simplified: the wider type wins; at least 32 bits.
  const Type* arithmetic(const Type* l, const Type* r);
  /// Reports a constant right operand with no meaning (a shift by a negative count or by
  /// 64 or more, `/ 0`).
  bool literalOperandFits(const ast::Binary& b);
  /// The value of an integer expression of literals, enumerators and `let`s (`-1`,
  /// `1 << 3`, `N - 1`), as the program would compute it in 64 bits; nothing otherwise.
  std::optional<int64_t> foldedInteger(const ast::Expr& e, int depth = 0) const;
  /// In `reason == NAME`, NAME is looked up among `enum`'s own enumerators first.
  const Type* enumeratorOf(const Type* enum_type, const ast::Identifier& id);
  bool comparable(const ast::Binary& b, const Type* l, const Type* r);
  /// `skb->dev == "eth0"`: suggest a member of the struct that compares with the other side.
  void pointerToRecord(const ast::Expr& ptr, const Type* ptr_type, const ast::Expr& other,
                       const Type* other_type);
  ExprInfo conditional(const ast::Conditional& c);
  const Type* cast(const ast::Cast& c);
  bool sameType(const Type* a, const Type* b) const;
  bool assignable(const Type* from, const Type* to) const;

  Context& ctx_;
  Scope scope_;
  /// The arguments already said to shadow a builtin, by probe: said once, at the first use.
  std::set<std::pair<const ResolvedTarget*, std::string>> shadowing_said_;
  ExprTable& out_;
  /// Set by checkTable for the expression it checks (not for those inside it).
  bool table_allowed_ = false;
};

}  // namespace kq::sema
