// Names for numbers from C headers: `macros("linux/capability.h", "CAP_")` is a lookup
// table of the header's object-like macros that start with the prefix and are integers,
// evaluated by Clang (compiler/c/: a plugin, loaded here on first use) when the query is
// checked. Used as a table literal is: `let caps = macros(...)`, then `caps[cap]`.
#include <fmt/format.h>

#include "compiler/c/c_diagnostics.h"
#include "compiler/c/c_plugin.h"
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

constexpr const char* kExample = "macros(\"linux/capability.h\", \"CAP_\")";

std::string describe(const c::MacroResult& r, size_t names) {
  const auto& list = r.macros;
  std::string out = fmt::format("the macros of {}: {} = {}", r.path, list[0].name, list[0].value);
  if (list.size() > 1) out += fmt::format(", {} = {}", list[1].name, list[1].value);
  if (list.size() > 2) out += fmt::format(", ... ({} names)", names);
  return out;
}

const Type* checkMacros(BuiltinCall& c) {
  const ast::StringLiteral* header = c.literalString(0, "the header", kExample);
  const ast::StringLiteral* prefix = c.literalString(1, "the prefix", kExample);
  if (!header || !prefix) return c.types.error();
  const ast::Expr& header_arg = *c.call.args[0];
  const ast::Expr& prefix_arg = *c.call.args[1];
  if (prefix->value.empty()) {
    c.diags.report(DiagKind::ValueOutOfRange, prefix_arg.range, "`macros` needs a prefix")
        .note(fmt::format("the prefix is the start the macros' names share, as in `{}`", kExample));
    return c.types.error();
  }
  c::CInput input{header->value, c::sourceDirectory(c.sources->file(c.call.range.file).name())};
  Result<const c::MacroResult*> answer = c::cachedMacros(input, prefix->value);
  if (!answer) {
    c.diags.report(DiagKind::CUnavailable, c.call.range, "`macros` needs kq's C support")
        .note(answer.error().message);
    return c.types.error();
  }
  const c::MacroResult& found = **answer;
  if (!found.found && c::namesNoRegularFile(input)) {
    c.diags.report(DiagKind::HeaderNotFound, header_arg.range,
                   fmt::format("`{}` is not a regular file", header->value));
    return c.types.error();
  }
  if (!found.found) {
    c.diags
        .report(DiagKind::HeaderNotFound, header_arg.range,
                fmt::format("no header `{}` next to the script or in the system's include paths",
                            header->value))
        .note("kernel headers such as `linux/capability.h` are in the linux-libc-dev package");
    return c.types.error();
  }
  if (c::reportCDiagnostics(found.diagnostics, DiagKind::CError, header_arg.range,
                            fmt::format("while reading `{}` for `macros`", header->value),
                            *c.sources, c.diags)) {
    return c.types.error();
  }
  if (found.macros.empty()) {
    c.diags
        .report(DiagKind::NoSuchMacro, prefix_arg.range,
                found.with_prefix == 0
                    ? fmt::format("no macro of `{}` starts with `{}`", header->value, prefix->value)
                    : fmt::format("`{}` has {} macro{} starting with `{}`, and none is an integer",
                                  header->value, found.with_prefix,
                                  found.with_prefix == 1 ? "" : "s", prefix->value))
        .note("the prefix is case-sensitive; the macros are those the header defines and those "
              "of the headers it includes");
    return c.types.error();
  }
  auto table = std::make_shared<LookupTable>();
  // A macro sharing an earlier one's value (`CAP_LAST_CAP`) does not rename it.
  for (const c::Macro& m : found.macros) table->names.emplace(m.value, m.name);
  table->origin = describe(found, table->names.size());
  c.table = std::move(table);
  return c.types.table(false);
}

}  // namespace

void addMacroFunctions(std::vector<BuiltinFunction>& out) {
  out.push_back({"macros", BuiltinFn::Macros, 2, 2, checkMacros,
                 "macros(\"HEADER\", \"PREFIX\")",
                 "a lookup table naming numbers by a C header's macros with the prefix"});
}

}  // namespace kq::sema
