#include "serve/serve_check.h"

#include <map>

#include <fmt/format.h>

#include "serve/metric_names.h"

namespace kq::serve {
namespace {

/// A column's name, or a located error with the `as` that would make one.
void checkName(const std::string& column, const SourceRange& at, bool label, Diagnostics& diags) {
  if (columnName(column)) return;
  Diagnostic& d = diags.report(DiagKind::MetricName, at,
                               fmt::format("`{}` is not a name Prometheus accepts for a {}", column,
                                           label ? "label" : "metric"));
  d.note(label ? fmt::format("select the key with a name: `select {} as {}, ...`", column, legalSpelling(column))
               : fmt::format("name it: `{} as {}`", column, legalSpelling(column)));
}

bool isDuration(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Identifier) return ast::as<ast::Identifier>(e).name == "duration";
  if (e.kind != ast::ExprKind::Binary) return false;
  const auto& b = ast::as<ast::Binary>(e);
  return b.op == ast::BinaryOp::Sub && b.lhs->kind == ast::ExprKind::Identifier &&
         ast::as<ast::Identifier>(*b.lhs).name == "time";
}

}  // namespace

std::set<std::string> durationColumns(const sema::ResolvedQuery& query) {
  std::set<std::string> out;
  for (const sema::Column& c : query.shape.columns) {
    if (c.key >= 0 || !c.expr || c.expr->kind != ast::ExprKind::Call) continue;
    const auto& call = ast::as<ast::Call>(*c.expr);
    bool timed = call.callee == "hist" || call.callee == "lhist" || call.callee == "sum" ||
                 call.callee == "avg" || call.callee == "min" || call.callee == "max";
    if (timed && !call.args.empty() && isDuration(*call.args[0])) out.insert(c.name);
  }
  return out;
}

bool checkServable(const sema::CheckedProgram& checked, Diagnostics& diags) {
  size_t errors = diags.errorCount();
  std::map<std::string, SourceRange> metrics;  // a script's families are named alike at their peril
  for (const sema::ResolvedQuery& query : checked.program.queries) {
    const ast::Query& ast = *query.query;
    if (!query.aggregates) continue;  // its events are JSON lines (event_log.h)
    if (ast.clauses.every) {
      Diagnostic& d = diags.report(DiagKind::NotServable, ast.clauses.every->range,
                                   "a scrape reads all that was counted since the script started: "
                                   "`every` has no meaning in kq serve");
      d.note("leave `every` out; Prometheus' rate() and increase() give per-interval values");
    }
    for (size_t k = 0; k < ast.clauses.group_by.size() && k < query.shape.key_names.size(); ++k) {
      checkName(query.shape.key_names[k], ast.clauses.group_by[k]->range, /*label=*/true, diags);
    }
    for (const sema::Column& c : query.shape.columns) {
      if (c.key >= 0 || !c.expr) continue;
      checkName(c.name, c.expr->range, /*label=*/false, diags);
      std::optional<std::string> name = columnName(c.name);
      if (!name) continue;
      auto [it, added] = metrics.emplace(*name, c.expr->range);
      if (!added) {
        diags.report(DiagKind::MetricName, c.expr->range,
                     fmt::format("two aggregates of this script are both named `{}`", *name))
            .note("give one another name with `as`");
      }
    }
  }
  return diags.errorCount() == errors;
}

}  // namespace kq::serve
