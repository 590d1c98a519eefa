#include "driver/query_sources.h"

namespace kq::driver {
namespace {

bool isDuration(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Identifier) return ast::as<ast::Identifier>(e).name == "duration";
  if (e.kind != ast::ExprKind::Binary) return false;
  const auto& b = ast::as<ast::Binary>(e);
  return b.op == ast::BinaryOp::Sub && b.lhs->kind == ast::ExprKind::Identifier &&
         ast::as<ast::Identifier>(*b.lhs).name == "time";
}

std::vector<std::string> durationColumns(const sema::ResolvedQuery& query) {
  std::vector<std::string> out;
  for (const sema::Column& c : query.shape.columns) {
    if (c.key >= 0 || !c.expr || c.expr->kind != ast::ExprKind::Call) continue;
    const auto& call = ast::as<ast::Call>(*c.expr);
    bool timed = call.callee == "hist" || call.callee == "lhist" || call.callee == "sum" ||
                 call.callee == "avg" || call.callee == "min" || call.callee == "max";
    if (timed && !call.args.empty() && isDuration(*call.args[0])) out.push_back(c.name);
  }
  return out;
}

std::string folded(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space) out += c;
    else if (!out.empty() && out.back() != ' ') out += ' ';
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::vector<plan::QueryLimits> queryLimits(const sema::CheckedProgram& checked) {
  std::vector<plan::QueryLimits> out;
  for (const sema::ResolvedQuery& q : checked.program.queries) {
    const ast::Clauses& clauses = q.query->clauses;
    out.push_back({clauses.for_duration ? clauses.for_duration->value : 0,
                   clauses.limit ? clauses.limit->value : 0});
  }
  return out;
}

std::vector<plan::QuerySource> querySources(const sema::CheckedProgram& checked, const SourceManager& sources) {
  std::vector<plan::QuerySource> out;
  for (const sema::ResolvedQuery& q : checked.program.queries) {
    SourceRange r = q.query->range;
    const std::string& text = sources.file(r.file).text();
    std::string query = r.end <= text.size() && r.begin <= r.end ? text.substr(r.begin, r.end - r.begin) : "";
    out.push_back({folded(query), durationColumns(q)});
  }
  return out;
}

}  // namespace kq::driver
