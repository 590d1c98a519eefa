#include "repl/probe_scope.h"

#include <optional>

#include "compiler/parse/parse.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/sema.h"
#include "compiler/sema/stdlib.h"

namespace kq::repl {
namespace {

/// A piece of kq parsed and checked against the session's kernel, quietly.
struct Checked {
  SourceManager sources;
  Diagnostics diags;
  std::optional<ast::Script> script;
  std::optional<sema::CheckedProgram> program;

  Checked(const CompletionContext& context, std::string text) {
    FileId file = sources.add("<completion>", std::move(text));
    script = parse::parseScript(sources, file, diags);
    if (script) program = sema::analyze(*script, sources, context.btf, context.kernel, diags);
  }

  /// The last query's first probe, if it checked.
  const sema::ResolvedProbe* probe() const {
    if (!program || program->program.queries.empty()) return nullptr;
    const sema::ResolvedQuery& q = program->program.queries.back();
    return q.probes.empty() ? nullptr : &q.probes.front();
  }
};

std::optional<ast::Script> parseQuietly(SourceManager& sources, std::string name, std::string text) {
  Diagnostics diags;
  FileId file = sources.add(std::move(name), std::move(text));
  return parse::parseScript(sources, file, diags);
}

void addDeclarations(const ast::Script& script, std::vector<std::string>& out) {
  for (const ast::Item& item : script.items) {
    if (const auto* let = std::get_if<ast::LetDecl>(&item)) out.push_back(let->name);
    if (const auto* fn = std::get_if<ast::FnDecl>(&item)) out.push_back(fn->name);
  }
}

}  // namespace

std::vector<std::string> probeArguments(const CompletionContext& context, const std::string& probe) {
  Checked checked(context, context.decls + "trace " + probe + "\n");
  std::vector<std::string> names;
  const sema::ResolvedProbe* p = checked.probe();
  if (!p || p->chain.empty()) return names;
  for (const sema::ProbeArg& arg : p->chain.back().args) {
    if (!arg.name.empty()) names.push_back(arg.name);
  }
  return names;
}

std::vector<std::string> memberNames(const CompletionContext& context, const std::string& probe,
                                     const std::string& expr, bool arrow) {
  Checked checked(context, context.decls + "trace " + probe + " select " + expr + "\n");
  const sema::ResolvedProbe* p = checked.probe();
  if (!p) return {};
  const ast::Query* query = checked.program->program.queries.back().query;
  if (query->clauses.select.empty()) return {};
  auto info = p->exprs.find(query->clauses.select.front().expr.get());
  if (info == p->exprs.end() || !info->second.type) return {};
  const sema::Type* type = info->second.type;
  if (arrow) {
    if (!type->isPointer()) return {};
    type = type->element;
  }
  if (!type->isRecord() || type->incomplete) return {};
  return checked.program->types->memberNames(type);
}

std::vector<std::string> declaredNames(const CompletionContext& context) {
  std::vector<std::string> names;
  SourceManager sources;
  auto script = parseQuietly(sources, "<decls>", context.decls);
  if (!script) return names;
  addDeclarations(*script, names);
  for (const ast::Item& item : script->items) {
    const auto* use = std::get_if<ast::UseDecl>(&item);
    if (!use) continue;
    for (const sema::StdlibModule& module : sema::stdlibModules()) {
      if (module.name != use->module) continue;
      if (auto parsed = parseQuietly(sources, std::string(module.name), std::string(module.text))) {
        addDeclarations(*parsed, names);
      }
    }
  }
  return names;
}

std::vector<std::string> stdlibProperties() {
  std::vector<std::string> names;
  SourceManager sources;
  for (const sema::StdlibModule& module : sema::stdlibModules()) {
    auto parsed = parseQuietly(sources, std::string(module.name), std::string(module.text));
    if (!parsed) continue;
    for (const ast::Item& item : parsed->items) {
      const auto* fn = std::get_if<ast::FnDecl>(&item);
      if (fn && fn->params.size() == 1 && fn->params[0].type) names.push_back(fn->name);
    }
  }
  return names;
}

std::vector<std::string> builtinNames(bool variables, bool functions) {
  std::vector<std::string> names;
  if (variables) {
    for (const sema::BuiltinVariable& v : sema::builtinVariables()) names.emplace_back(v.name);
  }
  if (functions) {
    for (const sema::BuiltinFunction& f : sema::builtinFunctions()) names.emplace_back(f.name);
  }
  return names;
}

std::vector<std::string> usableNames(const CompletionContext& context, const std::string& probe,
                                     const std::vector<std::string>& names) {
  if (names.empty()) return names;
  std::string query = context.decls + "trace " + probe + " select ";
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // of each name in `query`
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) query += ", ";
    ranges.push_back({static_cast<uint32_t>(query.size()), static_cast<uint32_t>(query.size() + names[i].size())});
    query += names[i];
  }
  // The probe alone first: one that does not check leaves nothing to judge the names by.
  if (!Checked(context, context.decls + "trace " + probe + "\n").probe()) return names;
  Checked checked(context, query + "\n");
  std::vector<bool> refused(names.size(), false);
  for (const Diagnostic& d : checked.diags.all()) {
    if (d.severity != Severity::Error) continue;
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (d.range.begin < ranges[i].second && ranges[i].first < d.range.end) refused[i] = true;
    }
  }
  std::vector<std::string> usable;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!refused[i]) usable.push_back(names[i]);
  }
  return usable;
}

std::vector<std::string> builtinFunctionNames(const CallPlace& place) {
  std::vector<std::string> names;
  for (const sema::BuiltinFunction& f : sema::builtinFunctions()) {
    if (f.aggregate && place.clause != CallPlace::Select) continue;
    if (f.placement == sema::Placement::Column && place.clause == CallPlace::Where) continue;
    if (f.placement == sema::Placement::Printed &&
        (place.clause == CallPlace::Where || place.clause == CallPlace::GroupBy)) {
      continue;
    }
    if (f.needs == sema::Needs::Exit && !place.has_exit) continue;
    if (f.needs == sema::Needs::Function && !place.traces_functions) continue;
    names.emplace_back(f.name);
  }
  return names;
}

}  // namespace kq::repl
