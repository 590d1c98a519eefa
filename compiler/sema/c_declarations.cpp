// C declarations, read through kq's C plugin (compiler/c/):
// - `use "myapp.h"`: the types a C header defines become kq types for casts and uprobe
//   arguments, kept apart from the kernel's: a name the kernel's BTF has too is an error,
//   so `struct sock` always means the kernel's (compiler/c/header_types.h keeps the result
//   by the header's content);
// - `use c "helpers.c"`: the file's external functions, callable with their C signatures
//   (compiler/c/c_source.h), and the check of such a call.
#include <fmt/format.h>

#include "compiler/c/c_diagnostics.h"
#include "compiler/c/c_plugin.h"
#include "compiler/c/c_source.h"
#include "compiler/c/header_types.h"
#include "compiler/sema/context.h"
#include "compiler/sema/expr_checker.h"

namespace kq::sema {
namespace {

/// The kernel's type of C name `name` (`struct sock`, `u32`), if it has one.
bool kernelHas(const btf::Btf& btf, std::string_view name) {
  for (auto [tag, find] : {std::pair{std::string_view("struct "), &btf::Btf::findStruct},
                           std::pair{std::string_view("union "), &btf::Btf::findUnion},
                           std::pair{std::string_view("enum "), &btf::Btf::findEnum}}) {
    if (name.substr(0, tag.size()) == tag) return (btf.*find)(name.substr(tag.size())).has_value();
  }
  return btf.findTypedef(name).has_value();
}

void loadHeader(Context& ctx, const ast::UseDecl& use) {
  c::CInput input{use.header, c::sourceDirectory(ctx.sources.file(use.range.file).name())};
  Result<c::HeaderTypesAnswer> answer = c::headerTypes(input);
  if (!answer) {
    ctx.diags.report(DiagKind::CUnavailable, use.range, "`use` of a C header needs kq's C support")
        .note(answer.error().message);
    return;
  }
  if (!answer->found && c::namesNoRegularFile(input)) {
    ctx.diags.report(DiagKind::HeaderNotFound, use.header_range,
                     fmt::format("`{}` is not a regular file", use.header));
    return;
  }
  if (!answer->found) {
    ctx.diags
        .report(DiagKind::HeaderNotFound, use.header_range,
                fmt::format("no header `{}` next to the script or in the system's include paths",
                            use.header))
        .note("a relative path is looked for in the script's directory first");
    return;
  }
  if (c::reportCDiagnostics(answer->diagnostics, DiagKind::CError, use.header_range,
                            fmt::format("while reading `{}` for `use`", use.header), ctx.sources,
                            ctx.diags)) {
    return;
  }
  for (const auto& [name, type] : answer->types->defined) {
    if (kernelHas(ctx.btf, name)) {
      ctx.diags
          .report(DiagKind::HeaderTypeClash, use.header_range,
                  fmt::format("`{}` of `{}` is also a kernel type", name, use.header))
          .note("kq keeps a header's types apart from the kernel's: rename it in the header");
      continue;
    }
    auto [previous, added] = ctx.header_types.emplace(name, type);
    if (!added && ctx.header_of_type[name] != use.header) {
      ctx.diags.report(DiagKind::HeaderTypeClash, use.header_range,
                       fmt::format("`{}` of `{}` is also defined by `{}`", name, use.header,
                                   ctx.header_of_type[name]));
      continue;
    }
    ctx.header_of_type[name] = use.header;
  }
}

/// The kq type of a C function's parameter or result; null for one kq cannot pass.
const Type* kqType(Context& ctx, const c::CScalar& s) {
  switch (s.kind) {
    case c::CScalar::Kind::Void: return ctx.types.voidType();
    case c::CScalar::Kind::Int: return ctx.types.integer(s.bytes, s.is_signed, s.spelling);
    case c::CScalar::Kind::Pointer: return ctx.types.pointerTo(ctx.types.voidType());
    case c::CScalar::Kind::Other: return nullptr;
  }
  return nullptr;
}

void loadCSource(Context& ctx, const ast::UseDecl& use) {
  c::CInput input{use.header, c::sourceDirectory(ctx.sources.file(use.range.file).name())};
  Result<const c::CompiledC*> compiled = c::compileCSource(input);
  if (!compiled) {
    ctx.diags.report(DiagKind::CUnavailable, use.range, "`use c` needs kq's C support")
        .note(compiled.error().message);
    return;
  }
  const c::CCompileResult& result = (*compiled)->result;
  if (!result.found && c::namesNoRegularFile(input)) {
    ctx.diags.report(DiagKind::HeaderNotFound, use.header_range,
                     fmt::format("`{}` is not a regular file", use.header));
    return;
  }
  if (!result.found) {
    ctx.diags.report(DiagKind::HeaderNotFound, use.header_range,
                     fmt::format("no C file `{}` next to the script", use.header));
    return;
  }
  if (c::reportCDiagnostics(result.diagnostics, DiagKind::CError, use.header_range,
                            fmt::format("while compiling `{}` for `use c`", use.header),
                            ctx.sources, ctx.diags)) {
    return;
  }
  for (const c::CFunctionSignature& sig : result.functions) {
    CFunction fn{sig.name, kqType(ctx, sig.return_type), {}, (*compiled)->bitcode};
    std::string unsupported = fn.return_type && fn.return_type->kind != TypeKind::Void
                                  ? ""
                                  : sig.return_type.spelling;
    for (const c::CScalar& p : sig.params) {
      const Type* t = kqType(ctx, p);
      if (!t || t->kind == TypeKind::Void) unsupported = p.spelling;
      fn.params.push_back(t);
    }
    if (!unsupported.empty()) {
      ctx.diags
          .report(DiagKind::Unsupported, use.header_range,
                  fmt::format("`{}` of `{}` takes or returns `{}`: kq passes integers and "
                              "pointers, and calls functions that return one",
                              sig.name, use.header, unsupported))
          .note(fmt::format("make it `static` if queries do not call it; it is on line {}",
                            sig.line));
      continue;
    }
    if (ctx.decls.fns.count(sig.name) || ctx.c_functions.count(sig.name)) {
      ctx.diags.report(DiagKind::DuplicateDeclaration, use.header_range,
                       fmt::format("`{}` of `{}` is already declared", sig.name, use.header));
      continue;
    }
    ctx.c_functions.emplace(sig.name, std::move(fn));
  }
}

}  // namespace

void loadHeaderTypes(Context& ctx) {
  for (const ast::Item& item : ctx.script.items) {
    const auto* use = std::get_if<ast::UseDecl>(&item);
    if (!use || use->header.empty()) continue;
    if (use->c_source) {
      loadCSource(ctx, *use);
    } else {
      loadHeader(ctx, *use);
    }
  }
}

ExprInfo ExprChecker::cCall(const ast::Call& c, const CFunction& fn) {
  ExprInfo info;
  info.type = error();
  std::vector<const Type*> args;
  for (const ast::ExprPtr& arg : c.args) args.push_back(check(*arg));
  if (args.size() != fn.params.size()) {
    report(DiagKind::WrongArgumentCount, c.range,
           fmt::format("the C function `{}` takes {} argument{}, not {}", fn.name,
                       fn.params.size(), fn.params.size() == 1 ? "" : "s", args.size()));
    return info;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Type* wanted = fn.params[i];
    const Type* got = args[i];
    if (got->isError()) return info;
    bool fits = wanted->isPointer() ? got->isPointer() || got->isInteger() : got->isInteger();
    if (!fits) {
      report(DiagKind::TypeMismatch, c.args[i]->range,
             fmt::format("the C function `{}` takes `{}` as argument {}, not `{}`", fn.name,
                         wanted->spelling, i + 1, got->spelling));
      return info;
    }
  }
  info.type = fn.return_type;
  info.ref = Ref::CFunction;
  info.c_function = &fn;
  return info;
}

}  // namespace kq::sema
