// The type checker on lookup tables: table literals (`{0: "CAP_CHOWN", 1: ...}`), lookups
// (`caps[cap]`), and comparisons of a lookup with a name, folded into comparisons of the
// key (`caps[cap] == "CAP_SYS_ADMIN"` is `cap == 21`), so the kernel compares no strings.
#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"
#include "compiler/sema/expr_checker.h"

namespace kq::sema {
namespace {

/// A name of `names` made of the same `|`-separated parts as `name` in another order
/// (`ACK|SYN` for a table of flags that writes `SYN|ACK`).
std::optional<std::string_view> sameParts(std::string_view name, const std::vector<std::string_view>& names) {
  auto parts = [](std::string_view text) {
    std::vector<std::string_view> out;
    for (size_t at = 0; at <= text.size();) {
      size_t bar = std::min(text.find('|', at), text.size());
      out.push_back(text.substr(at, bar - at));
      at = bar + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  if (name.find('|') == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> wanted = parts(name);
  for (std::string_view candidate : names) {
    if (candidate.size() == name.size() && parts(candidate) == wanted) return candidate;
  }
  return std::nullopt;
}

std::string sourceText(const SourceManager& sources, SourceRange r) {
  return sources.file(r.file).text().substr(r.begin, r.end - r.begin);
}

const char* kindName(const ast::TableConstant& c) { return c.is_string ? "string" : "integer"; }

/// The integer an index written as a literal (`caps[21]`, `caps[-1]`) has.
std::optional<int64_t> literalInteger(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Integer) {
    return static_cast<int64_t>(ast::as<ast::IntegerLiteral>(e).value);
  }
  if (e.kind == ast::ExprKind::Unary) {
    const auto& u = ast::as<ast::Unary>(e);
    if (u.op == ast::UnaryOp::Negate && u.operand->kind == ast::ExprKind::Integer) {
      return static_cast<int64_t>(0 - ast::as<ast::IntegerLiteral>(*u.operand).value);
    }
  }
  return std::nullopt;
}

bool isNameLookup(const ExprInfo& info) {
  return info.table && info.type->kind == TypeKind::String && !info.table->stringKeys();
}

}  // namespace

ExprInfo ExprChecker::tableLiteral(const ast::TableLiteral& t) {
  ExprInfo info;
  info.type = error();
  if (t.entries.empty()) {
    report(DiagKind::EmptyTable, t.range, "a table needs at least one entry")
        .note("for example `{0: \"CAP_CHOWN\", 1: \"CAP_DAC_OVERRIDE\"}`");
    return info;
  }
  const ast::TableEntry& first = t.entries.front();
  bool string_keys = first.key.is_string;
  if (first.value.is_string == string_keys) {
    report(DiagKind::TypeMismatch, {t.range.file, first.key.range.begin, first.value.range.end},
           fmt::format("a table maps integers to strings or strings to integers, not {}s to {}s",
                       kindName(first.key), kindName(first.value)));
    return info;
  }
  auto table = std::make_shared<LookupTable>();
  std::map<std::string, SourceRange> seen;  // each key as written, and where
  bool failed = false;
  for (const ast::TableEntry& entry : t.entries) {
    for (auto [constant, model, what] : {std::tuple{&entry.key, &first.key, "key"},
                                         std::tuple{&entry.value, &first.value, "value"}}) {
      if (constant->is_string == model->is_string) continue;
      report(DiagKind::TypeMismatch, constant->range,
             fmt::format("this table's {}s are {}s, and `{}` is a{} {}", what, kindName(*model),
                         sourceText(ctx_.sources, constant->range),
                         constant->is_string ? "" : "n", kindName(*constant)))
          .note(model->range, fmt::format("the first {} is here", what));
      failed = true;
    }
    if (entry.key.is_string != string_keys || entry.value.is_string == string_keys) continue;
    std::string key = string_keys ? entry.key.string : std::to_string(entry.key.integer);
    auto [previous, added] = seen.emplace(key, entry.key.range);
    if (!added) {
      report(DiagKind::DuplicateKey, entry.key.range,
             fmt::format("`{}` is a key of this table twice",
                         sourceText(ctx_.sources, entry.key.range)))
          .note(previous->second, "its first entry is here");
      failed = true;
      continue;
    }
    if (string_keys) {
      table->numbers.emplace(entry.key.string, entry.value.integer);
    } else {
      table->names.emplace(entry.key.integer, entry.value.string);
    }
  }
  if (failed) return info;
  info.type = ctx_.types.table(string_keys);
  info.table = std::move(table);
  info.constant = true;
  return info;
}

void ExprChecker::tableNotIndexed(const ast::Expr& e, const ExprInfo& info) {
  bool numbers = info.table && info.table->stringKeys();
  std::string name = e.kind == ast::ExprKind::Identifier ? quoteText(e) : "{...}";
  report(DiagKind::TableNotIndexed, e.range,
         fmt::format("{} is a lookup table, not a value", quote(e)))
      .note(numbers
                ? fmt::format("index it with a name: `{}[\"...\"]` is the number of that name", name)
                : fmt::format("index it with a number: `{}[x]` is the name of `x`", name));
}

ExprInfo ExprChecker::lookup(const ast::Index& ix, const ExprInfo& table_info) {
  ExprInfo info;
  info.type = error();
  const Type* i = check(*ix.index);
  if (!table_info.table || i->isError()) return info;
  const LookupTable& table = *table_info.table;
  info.table = table_info.table;
  if (!table.stringKeys()) {
    if (!i->isInteger()) {
      report(DiagKind::TypeMismatch, ix.index->range,
             fmt::format("{} is indexed by integers, and {} is `{}`", quote(*ix.base),
                         quote(*ix.index), i->spelling));
      return info;
    }
    if (auto key = literalInteger(*ix.index)) {
      if (!table.names.count(*key)) {
        report(DiagKind::NotInTable, ix.index->range,
               fmt::format("{} has no entry for {}", quote(*ix.base), *key));
        return info;
      }
      info.constant = true;
    }
    info.type = ctx_.types.string();
    return info;
  }
  if (!i->isStringLike()) {
    report(DiagKind::TypeMismatch, ix.index->range,
           fmt::format("{} is indexed by names, and {} is `{}`", quote(*ix.base), quote(*ix.index),
                       i->spelling));
    return info;
  }
  if (ix.index->kind != ast::ExprKind::String) {
    report(DiagKind::Unsupported, ix.index->range,
           fmt::format("{} is looked up when kq compiles the query: index it with a string literal",
                       quote(*ix.base)))
        .note("for example `perms[\"read\"]`");
    return info;
  }
  const std::string& name = ast::as<ast::StringLiteral>(*ix.index).value;
  auto it = table.numbers.find(name);
  if (it == table.numbers.end()) {
    Diagnostic& diag = report(DiagKind::NotInTable, ix.index->range,
                              fmt::format("{} has no entry `{}`", quote(*ix.base), name));
    if (auto close = closestName(name, table.allNames())) {
      diag.note(fmt::format("did you mean `{}`?", *close));
    }
    return info;
  }
  info.type = ctx_.types.s64();
  info.constant = true;
  info.value = it->second;
  return info;
}

bool ExprChecker::isNetnsInode(const ast::Expr& e) {
  const ExprInfo& i = info(e);
  if (i.ref == Ref::Builtin && i.variable) return i.variable->name == "netns";
  return (i.ref == Ref::Property || i.ref == Ref::Fn) && i.fn && i.fn->name == "dev_netns";
}

std::optional<ExprInfo> ExprChecker::foldLookupComparison(const ast::Binary& b) {
  using Op = ast::BinaryOp;
  if (b.op != Op::Eq && b.op != Op::Ne && b.op != Op::Match) return std::nullopt;
  const ast::Expr* lookup = b.lhs.get();
  const ast::Expr* other = b.rhs.get();
  // A namespace's inode (`netns`, `dev_netns`) against the name `ip netns` gives it.
  bool inode = !isNameLookup(info(*lookup)) && !isNameLookup(info(*other)) &&
               (isNetnsInode(*lookup) || isNetnsInode(*other));
  if (inode ? !isNetnsInode(*lookup) : !isNameLookup(info(*lookup))) std::swap(lookup, other);
  // `~` matches its left side against the glob on its right.
  if ((!inode && !isNameLookup(info(*lookup))) || (b.op == Op::Match && lookup != b.lhs.get())) {
    return std::nullopt;
  }
  // The name: a string literal, or a `let` of one.
  const ast::Expr* literal = other;
  const ExprInfo& other_info = info(*other);
  if (other_info.ref == Ref::Let && other_info.let) literal = other_info.let->value.get();
  if (literal->kind != ast::ExprKind::String) return std::nullopt;  // compared in the kernel
  const std::string& name = ast::as<ast::StringLiteral>(*literal).value;
  std::shared_ptr<LookupTable> namespaces = inode ? netnsTable(ctx_.kernel) : nullptr;
  const LookupTable& table = inode ? *namespaces : *info(*lookup).table;
  bool glob = b.op == Op::Match;
  std::vector<int64_t> keys = table.keysNamed(name, glob);
  ExprInfo out;
  out.type = error();
  if (keys.empty()) {
    const char* why = inode ? (glob ? "`ip netns` names no namespace that does" : "`ip netns` names no such namespace")
                            : (glob ? "no name in its table does" : "its table has no such name");
    Diagnostic& diag = report(DiagKind::NotInTable, other->range,
                              fmt::format(glob ? "{} never matches {}: {}" : "{} is never {}: {}", quote(*lookup),
                                          quote(*other), why));
    if (auto same = sameParts(name, table.allNames())) {
      diag.note(fmt::format("did you mean `{}`? the table writes these parts in that order", *same));
    } else if (auto close = closestName(name, table.allNames())) {
      diag.note(fmt::format("did you mean `{}`?", *close));
    } else if (inode) {
      diag.note(fmt::format("{}; an inode compares too ({} == 4026531840)", table.origin, quote(*lookup)));
    }
    return out;
  }
  out.type = ctx_.types.boolType();
  out.constant = info(*lookup).constant;
  out.keys = std::move(keys);
  return out;
}

}  // namespace kq::sema
