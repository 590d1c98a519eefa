#include "compiler/sema/sema.h"

#include <fmt/format.h>

#include "compiler/parse/parse.h"
#include "compiler/sema/context.h"
#include "compiler/sema/stdlib.h"

namespace kq::sema {

const ast::Script* Context::loadModule(const std::string& name) {
  for (const auto& module : modules) {
    if (sources.file(module->file).name() == "stdlib/" + name + ".kq") return module.get();
  }
  for (const StdlibModule& module : stdlibModules()) {
    if (module.name != name) continue;
    FileId file = sources.add("stdlib/" + name + ".kq", std::string(module.text));
    std::optional<ast::Script> parsed = parse::parseScript(sources, file, diags);
    if (!parsed) return nullptr;
    modules.push_back(std::make_unique<ast::Script>(std::move(*parsed)));
    const ast::Script* script = modules.back().get();
    for (const ast::Item& item : script->items) {
      if (const auto* fn = std::get_if<ast::FnDecl>(&item)) {
        fn_home[fn] = script;
        module_fns[script][fn->name] = fn;
      }
    }
    return script;
  }
  return nullptr;
}

void Context::loadProperties(std::string_view name) {
  auto add = [&](const ast::Script& script) {
    for (const ast::Item& item : script.items) {
      const auto* fn = std::get_if<ast::FnDecl>(&item);
      if (fn && fn->params.size() == 1 && fn->params[0].type) properties[fn->name].push_back(fn);
    }
  };
  if (!properties_loaded) {
    properties_loaded = true;
    add(script);
  }
  // Parsing a module costs more than a one-liner: only those that can declare `name`.
  std::string declaration = "fn " + std::string(name) + "(";
  for (const StdlibModule& module : stdlibModules()) {
    if (property_modules.count(std::string(module.name))) continue;
    if (!name.empty() && module.text.find(declaration) == std::string_view::npos) continue;
    property_modules.insert(std::string(module.name));
    if (const ast::Script* parsed = loadModule(std::string(module.name))) add(*parsed);
  }
}

namespace {

// Pass 1: `use` brings in stdlib modules; every `let` and `fn` gets a unique name.
void collectDeclarations(Context& ctx) {
  std::map<std::string, SourceRange> declared_at;
  auto declare = [&](const std::string& name, SourceRange at, const void* decl,
                     const std::string& module) {
    const void* previous = nullptr;
    if (auto it = ctx.decls.lets.find(name); it != ctx.decls.lets.end()) previous = it->second;
    if (auto it = ctx.decls.fns.find(name); it != ctx.decls.fns.end()) previous = it->second;
    if (!previous) {
      ctx.decls.origin[decl] = module;
      declared_at[name] = at;
      return true;
    }
    const std::string& previous_module = ctx.decls.origin[previous];
    Diagnostic& diag = ctx.diags.report(DiagKind::DuplicateDeclaration, at,
                                        fmt::format("`{}` is already declared", name));
    if (previous_module.empty()) {
      diag.note(declared_at[name], "the first declaration is here");
    } else {
      diag.note(fmt::format("`use {}` declares it", previous_module));
    }
    return false;
  };
  auto addDecls = [&](const ast::Script& script, const std::string& module) {
    for (const ast::Item& item : script.items) {
      if (const auto* let = std::get_if<ast::LetDecl>(&item)) {
        if (declare(let->name, let->name_range, let, module)) ctx.decls.lets[let->name] = let;
      } else if (const auto* fn = std::get_if<ast::FnDecl>(&item)) {
        if (declare(fn->name, fn->name_range, fn, module)) ctx.decls.fns[fn->name] = fn;
      }
    }
  };

  for (const ast::Item& item : ctx.script.items) {
    const auto* use = std::get_if<ast::UseDecl>(&item);
    if (!use || !use->header.empty()) continue;  // a C header's types: loadHeaderTypes
    const ast::Script* module = ctx.loadModule(use->module);
    if (!module) {
      std::vector<std::string_view> names;
      for (const StdlibModule& m : stdlibModules()) names.push_back(m.name);
      Diagnostic& diag = ctx.diags.report(DiagKind::UnknownModule, use->range,
                                          fmt::format("no stdlib module `{}`", use->module));
      if (auto close = closestName(use->module, names)) {
        diag.note(fmt::format("did you mean `{}`?", *close));
      } else {
        std::string list;
        for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
        diag.note(fmt::format("the stdlib modules are {}", list));
      }
      continue;
    }
    addDecls(*module, use->module);
  }
  addDecls(ctx.script, "");
}

// Pass 2: every probe target, against BTF and the kernel.
void resolveProbes(Context& ctx, Program& program) {
  std::map<std::string, SourceRange> named_at;  // the queries' names
  for (const ast::Item& item : ctx.script.items) {
    const auto* query = std::get_if<ast::Query>(&item);
    if (!query) continue;
    if (!query->name.empty()) {
      auto [first, fresh] = named_at.emplace(query->name, query->name_range);
      if (!fresh) {
        ctx.diags.report(DiagKind::DuplicateDeclaration, query->name_range,
                         fmt::format("another query is named `{}`", query->name))
            .note(first->second, "that query is here")
            .note("each query's name says which query an event or table came from: give this one another");
      }
    }
    ResolvedQuery resolved;
    resolved.query = query;
    for (const ast::Probe& probe : query->probes) {
      ResolvedProbe rp;
      bool resolved_all = true;
      for (const ast::Target& target : probe.chain) {
        std::optional<ResolvedTarget> rt = resolveTarget(ctx, target);
        resolved_all = resolved_all && rt.has_value();
        if (rt) rp.chain.push_back(std::move(*rt));
      }
      if (!resolved_all) rp.chain.clear();  // checked no further
      if (!rp.chain.empty() && firesAtReturn(rp.chain.back())) rp.at_exit = true;
      resolved.probes.push_back(std::move(rp));
    }
    resolveJoins(ctx, resolved);
    chooseTracepointRecords(ctx, resolved);  // needs the joins' names
    program.queries.push_back(std::move(resolved));
  }
}

}  // namespace

std::optional<CheckedProgram> analyze(const ast::Script& script, SourceManager& sources,
                                      const btf::Btf& btf, host::KernelInfo& kernel,
                                      Diagnostics& diags) {
  CheckedProgram out;
  out.types = std::make_unique<TypeTable>();
  Context ctx{script, sources, btf, kernel, *out.types, diags, {}, {}, {}, false};
  size_t errors = diags.errorCount();
  auto failed = [&] { return diags.errorCount() > errors; };

  // The passes, in order. Each needs the previous one's output: declarations before
  // expressions (which use them), probes before expressions (whose names they bring).
  // A query whose probe did not resolve is skipped by the expression passes, so one
  // misspelled function does not hide the mistakes in the other queries.
  collectDeclarations(ctx);
  readConfig(ctx, out.program);
  loadHeaderTypes(ctx);  // before probes, whose arguments may have the headers' types
  if (failed()) return std::nullopt;
  resolveProbes(ctx, out.program);
  size_t after_probes = diags.errorCount();
  checkDeclarations(ctx);
  if (diags.errorCount() > after_probes) return std::nullopt;
  checkQueries(ctx, out.program);
  checkExtensions(ctx, out.program);
  if (failed()) return std::nullopt;
  for (ResolvedQuery& query : out.program.queries) checkQueryShape(ctx, query);
  if (failed()) return std::nullopt;

  out.modules = std::move(ctx.modules);
  out.c_functions = std::move(ctx.c_functions);
  return out;
}

}  // namespace kq::sema
