// `config NAME = VALUE`: settings of a whole script, read before its queries are checked.
// Each setting is a name and a bound number; one not known, given twice or out of bounds is
// an error at the place it is written.

#include <fmt/format.h>

#include "compiler/sema/context.h"
#include "compiler/sema/types.h"

namespace kq::sema {
namespace {

struct Setting {
  std::string_view name;
  uint64_t least, most, example;
  std::string_view what;
  uint32_t ScriptConfig::*field;
};

// The largest table a script may ask for: a group of a histogram takes over 500 bytes of
// kernel memory, so a million of them is half a gigabyte.
constexpr uint64_t kMostGroups = 1 << 20;

const Setting kSettings[] = {
    {"max_groups", 1, kMostGroups, 100000, "the groups each aggregate table holds (10,240 by default)",
     &ScriptConfig::max_groups},
};

}  // namespace

void readConfig(Context& ctx, Program& program) {
  std::map<std::string_view, SourceRange> given;
  for (const ast::Item& item : ctx.script.items) {
    const auto* config = std::get_if<ast::ConfigDecl>(&item);
    if (!config) continue;
    const Setting* setting = nullptr;
    for (const Setting& s : kSettings) {
      if (s.name == config->name) setting = &s;
    }
    if (!setting) {
      std::vector<std::string_view> names;
      for (const Setting& s : kSettings) names.push_back(s.name);
      Diagnostic& d = ctx.diags.report(DiagKind::UnknownSetting, config->name_range,
                                       fmt::format("kq has no setting `{}`", config->name));
      if (auto close = closestName(config->name, names)) {
        d.note(fmt::format("did you mean `{}`?", *close));
      } else {
        for (const Setting& s : kSettings) d.note(fmt::format("`config {}`: {}", s.name, s.what));
      }
      continue;
    }
    const ast::Expr& value = *config->value;
    const auto* number = value.kind == ast::ExprKind::Integer ? &ast::as<ast::IntegerLiteral>(value) : nullptr;
    if (!number || number->unit != ast::NumberUnit::None) {
      ctx.diags.report(DiagKind::ExpectedNumber, value.range,
                       fmt::format("`config {}` takes a number", setting->name))
          .note(fmt::format("for example `config {} = {}`", setting->name, setting->example));
      continue;
    }
    if (number->value < setting->least || number->value > setting->most) {
      ctx.diags.report(DiagKind::ValueOutOfRange, value.range,
                       fmt::format("`config {}` is {} to {}, not {}", setting->name, setting->least,
                                   setting->most, number->value))
          .note(fmt::format("`{}`: {}", setting->name, setting->what));
      continue;
    }
    auto [first, added] = given.emplace(setting->name, config->range);
    if (!added) {
      ctx.diags.report(DiagKind::DuplicateDeclaration, config->range,
                       fmt::format("`config {}` is already set", setting->name))
          .note(first->second, "it is set here");
      continue;
    }
    program.config.*(setting->field) = static_cast<uint32_t>(number->value);
  }
}

}  // namespace kq::sema
