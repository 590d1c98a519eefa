// Rules about a whole query: what may be selected next to aggregates, and what `group by`
// and `every` need.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"

namespace kq::sema {
namespace {

/// An expression's text without spaces: `a->b + 1` and `a->b+1` are the same key.
std::string compact(const SourceManager& sources, const ast::Expr& e) {
  const std::string& text = sources.file(e.range.file).text();
  std::string out;
  for (uint32_t i = e.range.begin; i < e.range.end; ++i) {
    if (!isspace(static_cast<unsigned char>(text[i]))) out += text[i];
  }
  return out;
}

bool isAggregate(const ResolvedProbe& probe, const ast::Expr& e) {
  auto it = probe.exprs.find(&e);
  return it != probe.exprs.end() && it->second.ref == Ref::BuiltinFunction &&
         builtinFunctions()[it->second.index].aggregate;
}

}  // namespace

void checkQueryShape(Context& ctx, const ResolvedQuery& query) {
  const ast::Clauses& clauses = query.query->clauses;
  if (query.probes.empty() || query.probes.front().chain.empty()) return;
  const ResolvedProbe& probe = query.probes.front();

  if (!query.aggregates) {
    if (clauses.group_by_range) {
      ctx.diags.report(DiagKind::AggregateMisuse, *clauses.group_by_range,
                       "`group by` needs an aggregate in `select`, such as `count()`")
          .note("for example: group by comm select comm, count()");
    }
    if (clauses.every) {
      ctx.diags.report(DiagKind::AggregateMisuse, clauses.every->range,
                       "`every` prints aggregates, and this query selects none")
          .note("select an aggregate such as `count()`, or drop `every`");
    }
    return;
  }
  std::vector<std::string> keys;
  for (const ast::ExprPtr& key : clauses.group_by) keys.push_back(compact(ctx.sources, *key));
  for (const ast::SelectItem& item : clauses.select) {
    if (isAggregate(probe, *item.expr)) continue;
    std::string text = compact(ctx.sources, *item.expr);
    if (std::find(keys.begin(), keys.end(), text) != keys.end()) continue;
    Diagnostic& diag = ctx.diags.report(
        DiagKind::AggregateMisuse, item.expr->range,
        fmt::format("`{}` is neither an aggregate nor a `group by` key", text));
    diag.note(clauses.group_by_range ? fmt::format("add it to `group by`")
                                     : fmt::format("add `group by {}`", text));
  }
}

}  // namespace kq::sema
