// The type checker: every expression of every query, in the scope of each of its probes.
// Records each expression's type and meaning in the probe's ExprTable.
// This file holds the dispatch on expression kinds and the passes' entry points; names and
// calls are in check_names.cpp, members and operators in check_operators.cpp.
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"
#include "compiler/sema/expr_checker.h"

namespace kq::sema {

ExprChecker::ExprChecker(Context& ctx, Scope scope, ExprTable& out)
    : ctx_(ctx), scope_(std::move(scope)), out_(out) {}

const Type* ExprChecker::checkTable(const ast::Expr& e) {
  table_allowed_ = true;
  return check(e);
}

const Type* ExprChecker::check(const ast::Expr& e) {
  bool table_allowed = std::exchange(table_allowed_, false);
  if (std::optional<uint32_t> j = joinedOnly(e)) {
    if (const Type* type = joined(e, *j)) return type;
  }
  if (std::optional<ExprInfo> misuse = joinNameMisuse(e)) {
    out_[&e] = *misuse;
    return misuse->type;
  }
  ExprInfo info;
  switch (e.kind) {
    case ast::ExprKind::Integer: {
      const auto& lit = ast::as<ast::IntegerLiteral>(e);
      info.type = lit.value > INT64_MAX ? ctx_.types.u64() : ctx_.types.s64();
      info.constant = true;
      break;
    }
    case ast::ExprKind::String:
      info.type = ctx_.types.string();
      info.constant = true;
      break;
    case ast::ExprKind::Bool:
      info.type = ctx_.types.boolType();
      info.constant = true;
      break;
    case ast::ExprKind::Identifier:
      info = identifier(ast::as<ast::Identifier>(e));
      break;
    case ast::ExprKind::ReturnValue:
      info = returnValue(e);
      break;
    case ast::ExprKind::Call:
      info = call(ast::as<ast::Call>(e));
      break;
    case ast::ExprKind::Member:
      info = member(ast::as<ast::Member>(e));
      break;
    case ast::ExprKind::Index:
      info = index(ast::as<ast::Index>(e));
      break;
    case ast::ExprKind::Unary:
      info = unary(ast::as<ast::Unary>(e));
      break;
    case ast::ExprKind::Binary:
      info = binary(ast::as<ast::Binary>(e));
      break;
    case ast::ExprKind::Conditional:
      info = conditional(ast::as<ast::Conditional>(e));
      break;
    case ast::ExprKind::Cast:
      info.type = cast(ast::as<ast::Cast>(e));
      break;
    case ast::ExprKind::Table:
      info = tableLiteral(ast::as<ast::TableLiteral>(e));
      break;
  }
  if (!info.type) info.type = ctx_.types.error();
  if (info.type->kind == TypeKind::Table && !table_allowed) {
    tableNotIndexed(e, info);
    info.type = ctx_.types.error();
  }
  const Type* type = info.type;
  out_[&e] = std::move(info);
  return type;
}

const ExprInfo& ExprChecker::info(const ast::Expr& e) const { return out_.at(&e); }

Diagnostic& ExprChecker::report(DiagKind kind, SourceRange at, std::string message) {
  return ctx_.diags.report(kind, at, std::move(message));
}

std::string ExprChecker::quote(const ast::Expr& e) const { return sema::quote(ctx_.sources, e); }

const Type* ExprChecker::error() const { return ctx_.types.error(); }

void checkLet(Context& ctx, const ast::LetDecl& let) {
  if (ctx.decls.let_info.count(&let)) return;
  if (!ctx.decls.lets_in_progress.insert(&let).second) {
    ctx.diags.report(DiagKind::RecursiveFunction, let.name_range,
                     fmt::format("`{}` is defined in terms of itself", let.name))
        .note("a `let` is a constant: its value cannot use its own name");
    ExprInfo info;
    info.type = ctx.types.error();
    ctx.decls.let_info[&let] = info;
    return;
  }
  ExprTable table;
  ExprChecker checker(ctx, Scope{}, table);
  checker.checkTable(*let.value);
  ExprInfo info = table.at(let.value.get());
  info.body = std::make_shared<ExprTable>(std::move(table));  // for code generation
  if (!info.constant && !info.type->isError()) {
    ctx.diags.report(DiagKind::NotAvailableHere, let.value->range,
                     fmt::format("`let {}` must be a constant", let.name))
        .note("use `fn` for values computed from a probe's arguments");
  }
  ctx.decls.lets_in_progress.erase(&let);
  ctx.decls.let_info.emplace(&let, std::move(info));  // kept if a cycle already put one
}

void checkDeclarations(Context& ctx) {
  // Every constant, the script's and its modules'.
  for (const auto& [name, let] : ctx.decls.lets) checkLet(ctx, *let);
  // The script's functions whose parameters all have types are checked here, even if
  // unused; others (and the stdlib's) where they are called, with the arguments' types.
  for (const auto& [name, fn] : ctx.decls.fns) {
    if (!ctx.decls.origin[fn].empty()) continue;
    bool typed = true;
    for (const ast::Param& p : fn->params) typed = typed && p.type.has_value();
    if (!typed) continue;
    Scope scope;
    scope.calls.push_back(fn);
    for (const ast::Param& p : fn->params) {
      scope.params.emplace_back(p.name, resolveTypeName(ctx, *p.type));
    }
    ExprTable table;
    ExprChecker(ctx, std::move(scope), table).check(*fn->body);
  }
}

void checkQueries(Context& ctx, Program& program) {
  for (ResolvedQuery& query : program.queries) {
    const ast::Clauses& clauses = query.query->clauses;
    checkJoins(ctx, query);
    for (size_t p = 0; p < query.probes.size(); ++p) {
      ResolvedProbe& probe = query.probes[p];
      if (probe.chain.empty()) continue;
      checkJoinKeys(ctx, query, probe);
      // A clause shared by several probes is checked once per probe; Diagnostics drops the
      // repeats of an error they share.
      // Captures belong to their own target; clauses to the last one in a chain.
      for (const ResolvedTarget& target : probe.chain) {
        const ast::Target& ast_target = *target.target;
        const std::optional<ast::CaptureList>* captures = ast_target.captures();
        if (!captures || !*captures) continue;
        Scope scope;
        scope.target = &target;
        scope.at_exit = &probe.at_exit;
        scope.func = &probe.func;
        ExprChecker checker(ctx, scope, probe.exprs);
        for (const ast::Capture& capture : (*captures)->items) {
          if (capture.expr) checker.check(*capture.expr);
        }
      }
      Scope scope;
      scope.target = &probe.chain.back();
      scope.at_exit = &probe.at_exit;
      scope.func = &probe.func;
      scope.joins = &query.joins;
      ExprChecker checker(ctx, scope, probe.exprs);
      if (clauses.where) {
        Scope where_scope = scope;
        where_scope.in_where = true;
        const Type* t = ExprChecker(ctx, where_scope, probe.exprs).check(*clauses.where);
        if (!isTruthy(t)) {
          ctx.diags.report(DiagKind::TypeMismatch, clauses.where->range,
                               fmt::format("`where` needs a condition, not a `{}`", t->spelling));
        }
      }
      for (const ast::ExprPtr& key : clauses.group_by) checker.check(*key);
      Scope select_scope = scope;
      select_scope.aggregates_allowed = true;
      ExprChecker select_checker(ctx, select_scope, probe.exprs);
      for (const ast::SelectItem& item : clauses.select) {
        select_checker.check(*item.expr);
        const ExprInfo& info = probe.exprs.at(item.expr.get());
        if (info.type->kind == TypeKind::Array && !info.type->btf.file) {
          // An array field of a classic record: no BTF type says how to show it whole.
          std::string x = item.expr->kind == ast::ExprKind::Identifier
                              ? ast::as<ast::Identifier>(*item.expr).name : "x";
          ctx.diags.report(DiagKind::TypeMismatch, item.expr->range,
                           fmt::format("kq shows an array of the tracepoint's record (`{}`) by "
                                       "its elements", info.type->spelling))
              .note(info.type->element->size == 1 && (info.type->count == 4 || info.type->count == 16)
                        ? fmt::format("select an element (`{0}[0]`), or the address it holds: `ntop({0})`", x)
                        : fmt::format("select its elements: `{0}[0], {0}[1]`", x));
        }
        if (info.function && info.function->aggregate) {
          query.aggregates = true;
        }
      }
    }
    checkJoinFeeders(ctx, query);
  }
}

}  // namespace kq::sema

namespace kq::sema {

void checkExtensions(Context& ctx, Program& program) {
  for (const ast::Item& item : ctx.script.items) {
    const auto* decl = std::get_if<ast::ExtensionDecl>(&item);
    if (!decl) continue;
    ResolvedExtension& ext = program.extensions.emplace_back();
    ext.decl = decl;
    size_t errors = ctx.diags.errorCount();
    ext.target.description = "an ipftrace2 extension";
    if (auto skb = ctx.btf.findStruct("sk_buff")) {
      ext.target.args.push_back({"skb", ctx.types.pointerTo(ctx.types.fromBtf(*skb)), 0});
    }
    Scope scope;
    scope.target = &ext.target;
    ExprChecker checker(ctx, scope, ext.exprs);
    const ast::Clauses& clauses = decl->clauses;
    if (clauses.where) {
      const Type* t = checker.check(*clauses.where);
      if (!isTruthy(t)) {
        ctx.diags.report(DiagKind::TypeMismatch, clauses.where->range,
                         fmt::format("`where` needs a condition, not a `{}`", t->spelling));
      }
    }
    for (const ast::SelectItem& item : clauses.select) checker.check(*item.expr);
    // Laid out once its expressions are right (a mistake in one says enough).
    if (ctx.diags.errorCount() == errors) layOutExtension(ctx, ext);
  }
}

}  // namespace kq::sema
