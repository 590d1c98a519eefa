// Rules about a whole query, and what it prints: its columns and their names, which
// `select` item shows which `group by` key, the items that print through `fmt`, and the
// limits code generation relies on (one `top`, call-context depth, `func` in a packet
// `where`). Everything checked here is something `kq check` promises will compile.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "compiler/ast/compare.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"

namespace kq::sema {
namespace {

std::string sourceText(const SourceManager& sources, const ast::Expr& e) {
  const std::string& text = sources.file(e.range.file).text();
  return text.substr(e.range.begin, e.range.end - e.range.begin);
}

bool isAggregate(const ResolvedProbe& probe, const ast::Expr& e) {
  auto it = probe.exprs.find(&e);
  return it != probe.exprs.end() && it->second.function && it->second.function->aggregate;
}

const ExprInfo* infoOf(const ExprTable& exprs, const ast::Expr& e) {
  auto it = exprs.find(&e);
  return it == exprs.end() ? nullptr : &it->second;
}

bool isFmtCall(const ExprTable& exprs, const ast::Expr& e) {
  const ExprInfo* info = infoOf(exprs, e);
  return info && info->function && info->function->id == BuiltinFn::Fmt;
}

/// The `fmt` an item prints through: itself, or the body of the `fn` (or property) it
/// uses. `nested` is set for a `fmt` more than one `fn` down, which kq cannot print.
std::optional<FormatUse> formatOf(const ExprTable& exprs, const ast::Expr& item, bool& nested) {
  if (isFmtCall(exprs, item)) return FormatUse{&ast::as<ast::Call>(item), &exprs, nullptr};
  const ExprInfo* info = infoOf(exprs, item);
  if (!info || !(info->ref == Ref::Fn || info->ref == Ref::Property) || !info->fn || !info->body) {
    return std::nullopt;
  }
  const ast::Expr& body = *info->fn->body;
  if (isFmtCall(*info->body, body)) return FormatUse{&ast::as<ast::Call>(body), info->body.get(), &item};
  bool deeper = false;
  if (formatOf(*info->body, body, deeper) || deeper) nested = true;
  return std::nullopt;
}

void findFormats(Context& ctx, const ast::Clauses& clauses, ResolvedProbe& probe) {
  auto visit = [&](const ast::Expr& e, std::string_view where) {
    bool nested = false;
    if (auto use = formatOf(probe.exprs, e, nested)) {
      for (size_t i = 1; i < use->call->args.size(); ++i) {
        use->arg_names.push_back(sourceText(ctx.sources, *use->call->args[i]));
      }
      probe.formats.emplace(&e, *use);
    }
    if (nested) {
      ctx.diags.report(DiagKind::Unsupported, e.range,
                       fmt::format("kq cannot print a `fmt` more than one `fn` below `{}`", where))
          .note("call `fmt` in the `fn` that is used directly here");
    }
  };
  for (const ast::SelectItem& item : clauses.select) visit(*item.expr, "select");
  for (const ast::ExprPtr& key : clauses.group_by) visit(*key, "group by");
}

/// A call of a builtin function, in a probe's expressions or in a `fn` body they use.
struct BuiltinUse {
  const ast::Expr* expr;
  const BuiltinFunction* function;
  bool in_body;
};

/// Every call of a builtin function, each once, in the order written (tables are unordered).
std::vector<BuiltinUse> builtinCalls(const ResolvedProbe& probe) {
  std::set<const ExprTable*> seen;
  std::vector<const ExprTable*> tables = {&probe.exprs};
  std::map<const ast::Expr*, BuiltinUse> calls;
  while (!tables.empty()) {
    const ExprTable* table = tables.back();
    tables.pop_back();
    if (!seen.insert(table).second) continue;
    for (const auto& [expr, info] : *table) {
      if (info.body) tables.push_back(info.body.get());
      if (info.function) calls.emplace(expr, BuiltinUse{expr, info.function, table != &probe.exprs});
    }
  }
  std::vector<BuiltinUse> out;
  for (const auto& [expr, use] : calls) out.push_back(use);
  std::sort(out.begin(), out.end(), [](const BuiltinUse& a, const BuiltinUse& b) {
    return std::tie(a.expr->range.file, a.expr->range.begin) <
           std::tie(b.expr->range.file, b.expr->range.begin);
  });
  return out;
}

/// Whether `table` (a `fn` body's expressions) or a body it uses has `e`.
bool bodyHas(const ExprTable& table, const ast::Expr* e) {
  for (const auto& [expr, info] : table) {
    if (expr == e || (info.body && bodyHas(*info.body, e))) return true;
  }
  return false;
}

/// The expression of the query itself that uses the `fn` (or property) whose body has `e`
/// (`saddr` for the `fmt` of stdlib/net.kq's `saddr`), or null.
const ast::Expr* useOf(const ExprTable& exprs, const ast::Expr* e) {
  for (const auto& [expr, info] : exprs) {
    if (info.body && (info.ref == Ref::Fn || info.ref == Ref::Property) && bodyHas(*info.body, e)) return expr;
  }
  return nullptr;
}

/// `fmt` formats a whole column: as a `select` item or key, or the body of a `fn` used as
/// one. Anywhere else (inside `?:`, a comparison) it has no value to compute.
void checkFormatPlaces(Context& ctx, const ast::Clauses& clauses, const ResolvedProbe& probe) {
  // A `select` item or key whose `fmt` is a `fn` too far down is said by findFormats.
  std::set<const ast::Expr*> columns;
  for (const ast::SelectItem& item : clauses.select) columns.insert(item.expr.get());
  for (const ast::ExprPtr& key : clauses.group_by) columns.insert(key.get());
  std::set<const ast::Expr*> allowed;
  for (const auto& [item, use] : probe.formats) allowed.insert(use.call);
  std::vector<const ast::Expr*> misplaced;
  for (const BuiltinUse& use : builtinCalls(probe)) {
    if (use.function->id == BuiltinFn::Fmt && !allowed.count(use.expr)) misplaced.push_back(use.expr);
  }
  for (const ast::Expr* expr : misplaced) {
    // Said where the query uses the `fn` whose body it is (a stdlib property's `fmt` is no
    // line of the user's).
    if (const ast::Expr* use = useOf(probe.exprs, expr)) {
      if (columns.count(use)) continue;
      std::string name = sourceText(ctx.sources, *use);
      Diagnostic& diag = ctx.diags.report(
          DiagKind::Unsupported, use->range,
          fmt::format("`{}` is text made as the event prints (a `fmt`), not a value to compute with", name));
      const SourceFile& file = ctx.sources.file(expr->range.file);
      LineColumn at = file.lineColumn(expr->range.begin);
      diag.note(fmt::format("`{}` is defined at {}:{}: make it a `select` item or a `group by` key of its own",
                            name, file.name(), at.line));
      if (name.find("addr") != std::string::npos || name.find("tuple") != std::string::npos) {
        diag.note("to keep packets by address, filter in tcpdump's syntax: `pcap(\"src net 10.0.0.0/8\")`");
      }
      continue;
    }
    ctx.diags.report(DiagKind::Unsupported, expr->range,
                     "`fmt` formats a whole column, not a value inside an expression")
        .note("make it a `select` item (or a `group by` key) of its own, or the body of a "
              "`fn` used as one");
  }
}

/// Builtins that are text made as a column prints (`join`, `cat`: their Placement) stand
/// where a column's value is: a `select` item, a capture, a `fmt` argument, or (but `cat`,
/// which has no bytes to keep) a `group by` key. Never an operand of another expression.
void checkPlacements(Context& ctx, const ast::Clauses& clauses, const ResolvedProbe& probe) {
  std::set<const ast::Expr*> columns;
  std::set<const ast::Expr*> keys;
  for (const ast::SelectItem& item : clauses.select) columns.insert(item.expr.get());
  const std::optional<ast::CaptureList>* captures = probe.chain.back().target->captures();
  if (captures && *captures) {
    for (const ast::Capture& c : (*captures)->items) columns.insert(c.expr.get());
  }
  std::vector<BuiltinUse> calls = builtinCalls(probe);
  // Arguments of every `fmt` (one that is itself misplaced is reported on its own).
  for (const BuiltinUse& use : calls) {
    if (use.function->id != BuiltinFn::Fmt) continue;
    const auto& fmt_call = ast::as<ast::Call>(*use.expr);
    for (size_t i = 1; i < fmt_call.args.size(); ++i) columns.insert(fmt_call.args[i].get());
  }
  for (const ast::ExprPtr& key : clauses.group_by) keys.insert(key.get());
  for (const auto& [expr, function, in_body] : calls) {
    if (function->placement == Placement::Anywhere || columns.count(expr)) continue;
    std::string name = fmt::format("`{}`", sourceText(ctx.sources, *expr));
    if (in_body) {
      ctx.diags.report(DiagKind::NotAvailableHere, expr->range,
                       fmt::format("{} is text made when the event prints; a `fn` cannot return it",
                                   name))
          .note("write it in the `select` itself, or as an argument of a `fmt` that the `fn` returns");
      continue;
    }
    if (keys.count(expr)) {
      if (function->placement == Placement::Column) continue;
      ctx.diags.report(DiagKind::NotAvailableHere, expr->range,
                       fmt::format("{} is read when an event prints, and a `group by` key is kept "
                                   "in the kernel", name))
          .note("select it instead: `select " + sourceText(ctx.sources, *expr) + "`");
      continue;
    }
    ctx.diags.report(DiagKind::NotAvailableHere, expr->range,
                     fmt::format("{} is text made when the event prints; it has no value inside "
                                 "an expression", name))
        .note(function->placement == Placement::Column
                  ? "make it a `select` item (or a `group by` key) of its own, or an argument of `fmt`"
                  : "make it a `select` item of its own, or an argument of `fmt`");
  }
}

void checkEventQuery(Context& ctx, ResolvedQuery& query) {
  const ast::Clauses& clauses = query.query->clauses;
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
  for (const ast::SelectItem& item : clauses.select) {
    query.shape.columns.push_back(
        {item.expr.get(), item.alias ? *item.alias : sourceText(ctx.sources, *item.expr), -1, item.hidden});
  }
}

/// Aggregate queries: every key prints (unselected ones first), aggregates and selected keys
/// in `select` order; one `top` at most.
void checkAggregateQuery(Context& ctx, ResolvedQuery& query) {
  const ast::Clauses& clauses = query.query->clauses;
  const ResolvedProbe& probe = query.probes.front();
  QueryShape& shape = query.shape;
  std::vector<bool> selected(clauses.group_by.size(), false);
  for (const ast::ExprPtr& key : clauses.group_by) shape.key_names.push_back(sourceText(ctx.sources, *key));
  std::vector<Column> items;
  const ast::Expr* top = nullptr;
  for (const ast::SelectItem& item : clauses.select) {
    std::string name = item.alias ? *item.alias : sourceText(ctx.sources, *item.expr);
    if (isAggregate(probe, *item.expr)) {
      const ExprInfo* info = infoOf(probe.exprs, *item.expr);
      if (info->function->aggregate == plan::AggregateKind::Top) {
        if (top) {
          ctx.diags.report(DiagKind::AggregateMisuse, item.expr->range,
                           "a query keeps one `top`: it decides which groups the table shows")
              .note(top->range, "the first `top` is here");
        }
        top = item.expr.get();
      }
      items.push_back({item.expr.get(), name, -1});
      continue;
    }
    int32_t key = -1;
    for (size_t k = 0; k < clauses.group_by.size() && key < 0; ++k) {
      if (ast::sameExpr(*clauses.group_by[k], *item.expr)) key = static_cast<int32_t>(k);
    }
    if (key < 0) {
      std::string text = sourceText(ctx.sources, *item.expr);
      ctx.diags.report(DiagKind::AggregateMisuse, item.expr->range,
                       fmt::format("`{}` is neither an aggregate nor a `group by` key", text))
          .note(clauses.group_by_range ? "add it to `group by`" : fmt::format("add `group by {}`", text));
      continue;
    }
    selected[key] = true;
    if (item.alias) shape.key_names[key] = *item.alias;
    items.push_back({item.expr.get(), name, key});
  }
  for (size_t k = 0; k < clauses.group_by.size(); ++k) {
    if (!selected[k]) shape.columns.push_back({clauses.group_by[k].get(), shape.key_names[k], static_cast<int32_t>(k)});
  }
  shape.columns.insert(shape.columns.end(), items.begin(), items.end());
}

/// Call context (`a -> b -> c`) runs through kernel functions, at most kMaxCallContext deep.
void checkCallContext(Context& ctx, const ResolvedProbe& probe) {
  if (probe.chain.size() < 2) return;
  for (const ResolvedTarget& t : probe.chain) {
    if (!std::holds_alternative<ast::FunctionTarget>(t.target->kind)) {
      ctx.diags.report(DiagKind::Unsupported, t.target->range,
                       "call context (`->`) runs through kernel functions only")
          .note("each step of `a -> b` must be a kernel function, such as `tcp_sendmsg`");
      return;
    }
  }
  if (probe.chain.size() - 1 > kMaxCallContext) {
    ctx.diags.report(DiagKind::ValueOutOfRange, probe.chain[kMaxCallContext + 1].target->range,
                     fmt::format("a call context follows at most {} outer functions", kMaxCallContext));
  }
}

void checkPacket(Context& ctx, const ast::Clauses& clauses, const ResolvedProbe& probe,
                 bool aggregates) {
  const ast::Target& target = *probe.chain.back().target;
  const auto* packet = std::get_if<ast::PacketTarget>(&target.kind);
  if (!packet) return;
  if (packet->graph && aggregates) {
    ctx.diags.report(DiagKind::Unsupported, target.range, "`packet graph` prints each packet's calls as a tree, not a table")
        .note("count the functions packets pass through with `trace packet ... group by func select count()`");
  }
  if (probe.func.in_where && clauses.where) {
    ctx.diags.report(DiagKind::Unsupported, clauses.where->range,
                     "a `packet` query cannot filter on `func`: one program serves every function")
        .note("select `func` instead, or trace the functions by name: `trace ip_rcv, ip_output`");
  }
}

}  // namespace

void checkQueryShape(Context& ctx, ResolvedQuery& query) {
  const ast::Clauses& clauses = query.query->clauses;
  if (query.probes.empty() || query.probes.front().chain.empty()) return;
  if (clauses.every) query.shape.every_ns = clauses.every->value;
  if (clauses.for_duration) query.shape.for_ns = clauses.for_duration->value;
  if (clauses.limit) query.shape.limit = clauses.limit->value;
  bool packets = false;
  for (ResolvedProbe& probe : query.probes) {
    if (probe.chain.empty()) continue;
    const std::optional<ast::CaptureList>* captures = probe.chain.back().target->captures();
    if (captures && *captures) {
      for (const ast::Capture& c : (*captures)->items) {
        if (c.expr) probe.capture_names[c.expr.get()] = sourceText(ctx.sources, *c.expr);
      }
    }
    findFormats(ctx, clauses, probe);
    checkFormatPlaces(ctx, clauses, probe);
    checkPlacements(ctx, clauses, probe);
    checkCallContext(ctx, probe);
    checkPacket(ctx, clauses, probe, query.aggregates);
    packets = packets || std::holds_alternative<ast::PacketTarget>(probe.chain.back().target->kind);
  }
  if (clauses.track && !packets) {
    ctx.diags.report(DiagKind::Unsupported, *clauses.track, "`track` follows packets: it needs `trace packet`")
        .note("`trace packet where mark == 0x1 track` follows each packet that matched once");
  }
  if (query.aggregates) {
    checkAggregateQuery(ctx, query);
  } else {
    checkEventQuery(ctx, query);
  }
}

}  // namespace kq::sema
