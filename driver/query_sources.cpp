#include "driver/query_sources.h"

namespace kq::driver {
namespace {

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
    out.push_back({folded(query)});
  }
  return out;
}

}  // namespace kq::driver
