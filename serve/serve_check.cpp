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

}  // namespace

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

std::vector<std::string> servingProblems(const plan::PortablePlan& plan) {
  std::vector<std::string> out;
  std::map<std::string, std::string> metrics;
  for (const plan::AggregateLayout& table : plan.plan.layout.aggregates) {
    std::string query = "query " + plan::queryLabel(plan.plan.layout, table.query);
    if (table.every_ns) {
      out.push_back(fmt::format("{} has `every`: a scrape reads all that was counted since the "
                                "script started (build it without `every`; rate() and increase() give "
                                "per-interval values)", query));
    }
    for (const plan::FieldLayout& key : table.keys) {
      if (key.hidden || columnName(key.name)) continue;
      out.push_back(fmt::format("{}: `{}` is not a name Prometheus accepts for a label (build it again "
                                "with `select {} as {}, ...`)", query, key.name, key.name, legalSpelling(key.name)));
    }
    for (const plan::AggregateSlot& slot : table.slots) {
      std::optional<std::string> name = columnName(slot.name);
      if (!name) {
        out.push_back(fmt::format("{}: `{}` is not a name Prometheus accepts for a metric (build it again "
                                  "with `{} as {}`)", query, slot.name, slot.name, legalSpelling(slot.name)));
      } else if (auto [it, added] = metrics.emplace(*name, query); !added) {
        out.push_back(fmt::format("{}: two aggregates are both named `{}` (the other in {}): give one another "
                                  "name with `as`", query, *name, it->second));
      }
    }
  }
  return out;
}

}  // namespace kq::serve
