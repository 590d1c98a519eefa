// `use "myapp.h"`: the types a C header defines become kq types for casts and uprobe
// arguments, kept apart from the kernel's: a name the kernel's BTF has too is an error,
// so `struct sock` always means the kernel's. The header is read by Clang through
// compiler/c/header_types.h, which keeps the result by the header's content.
#include <fmt/format.h>

#include "compiler/c/c_diagnostics.h"
#include "compiler/c/c_plugin.h"
#include "compiler/c/header_types.h"
#include "compiler/sema/context.h"

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

}  // namespace

void loadHeaderTypes(Context& ctx) {
  for (const ast::Item& item : ctx.script.items) {
    const auto* use = std::get_if<ast::UseDecl>(&item);
    if (use && !use->header.empty()) loadHeader(ctx, *use);
  }
}

}  // namespace kq::sema
