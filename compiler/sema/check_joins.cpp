// Joins across probes (kq-language §7): what `NAME.` means in a query's expressions, the
// joined source's own `where` and `on`, and the values the kernel keeps for each join.
//
// The query's expressions are checked in its own probes' scope, except the largest ones
// that read only from one join (`issue.time`, `w.p->pid`, `str(o.filename)`): those are
// checked in the joined source's scope, where `issue.time` means its `time`, and become
// the values the join keeps (ResolvedJoin::stored), evaluated when the joined event
// happens. So a join keeps values, never pointers to follow later.
#include <map>
#include <algorithm>

#include <fmt/format.h>

#include "compiler/ast/compare.h"
#include "compiler/ast/visitor.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"
#include "compiler/sema/expr_checker.h"

namespace kq::sema {
namespace {

constexpr int kNoSide = -1;    // a constant: reads nothing
constexpr int kMainSide = -2;  // reads the query's own event (or several joins)

int combine(int a, int b) {
  if (a == kNoSide) return b;
  if (b == kNoSide) return a;
  return a == b ? a : kMainSide;
}

const ast::Identifier* joinBase(const ast::Expr& e) {
  if (e.kind != ast::ExprKind::Member) return nullptr;
  const auto& m = ast::as<ast::Member>(e);
  if (m.arrow || m.base->kind != ast::ExprKind::Identifier) return nullptr;
  return &ast::as<ast::Identifier>(*m.base);
}

std::optional<uint32_t> joinNamed(const std::vector<ResolvedJoin>& joins, const std::string& name) {
  for (uint32_t j = 0; j < joins.size(); ++j) {
    if (joins[j].join->name == name) return j;
  }
  return std::nullopt;
}

/// Which side an expression reads: kNoSide, kMainSide or a join's number. A `fn`'s body is
/// read through: a call reads from a join only if its body reads nothing of an event but
/// its parameters, and they read from that join (`fn us(t) = t / 1000` of `w.time`); one
/// reading the event itself (`fn lat(t) = time - t`) is the query's, its arguments kept.
class SideOf {
 public:
  SideOf(const Context& ctx, const std::vector<ResolvedJoin>& joins) : ctx_(ctx), joins_(joins) {}

  int operator()(const ast::Expr& e) { return side(e, nullptr); }

 private:
  /// A `fn`'s body being read: each parameter's side, the module it calls into.
  struct Body {
    std::map<std::string, int, std::less<>> params;
    const ast::Script* module = nullptr;
    std::vector<const ast::FnDecl*> calls;  // the bodies being read, innermost last
  };

  int side(const ast::Expr& e, const Body* body) {
    if (const ast::Identifier* base = joinBase(e); base && !body) {
      if (auto j = joinNamed(joins_, base->name)) return static_cast<int>(*j);
    }
    auto of = [&](const ast::Expr& x) { return side(x, body); };
    switch (e.kind) {
      case ast::ExprKind::Integer:
      case ast::ExprKind::String:
      case ast::ExprKind::Bool:
      case ast::ExprKind::Table:
        return kNoSide;
      case ast::ExprKind::Identifier: return name(ast::as<ast::Identifier>(e).name, body);
      case ast::ExprKind::ReturnValue:
        return kMainSide;
      case ast::ExprKind::Call: return call(ast::as<ast::Call>(e), body);
      case ast::ExprKind::Member:
        return of(*ast::as<ast::Member>(e).base);
      case ast::ExprKind::Index: {
        const auto& ix = ast::as<ast::Index>(e);
        return combine(of(*ix.base), of(*ix.index));
      }
      case ast::ExprKind::Unary:
        return of(*ast::as<ast::Unary>(e).operand);
      case ast::ExprKind::Binary: {
        const auto& b = ast::as<ast::Binary>(e);
        int joined = combine(of(*b.lhs), of(*b.rhs));
        // `s.fd == 0 and s.count > 0` is kept as its two comparisons: an `and` or `or`
        // branches, which a join's keeping program does not lower as a value of its own.
        if ((b.op == ast::BinaryOp::And || b.op == ast::BinaryOp::Or) && joined != kNoSide) return kMainSide;
        return joined;
      }
      case ast::ExprKind::Conditional: {
        const auto& c = ast::as<ast::Conditional>(e);
        return combine(combine(of(*c.cond), of(*c.then)), of(*c.otherwise));
      }
      case ast::ExprKind::Cast:
        return of(*ast::as<ast::Cast>(e).operand);
    }
    return kMainSide;
  }

  int name(const std::string& name, const Body* body) {
    // A `let` constant reads nothing; every other name is the query's (its arguments,
    // builtins, properties), or a mistake reported where the query's names are checked.
    if (body) {
      if (auto it = body->params.find(name); it != body->params.end()) return it->second;
      if (ctx_.decls.lets.count(name)) return kNoSide;
      for (const BuiltinVariable& v : builtinVariables()) {
        if (v.name == name) return kMainSide;
      }
      return ctx_.btf.findEnumerator(name) ? kNoSide : kMainSide;
    }
    return ctx_.decls.lets.count(name) ? kNoSide : kMainSide;
  }

  int call(const ast::Call& c, const Body* body) {
    // Aggregates count the query's events, `fmt` prints when they do, `entry` is the
    // query's function entry; a call of nothing reads the query's event (`fn now() = time`).
    if (c.args.empty() || c.callee == "fmt" || c.callee == "entry") return kMainSide;
    int args = kNoSide;
    std::vector<int> sides;  // each argument's, read once (a fn's body may nest calls deeply)
    for (const ast::ExprPtr& a : c.args) {
      sides.push_back(side(*a, body));
      args = combine(args, sides.back());
    }
    for (const BuiltinFunction& f : builtinFunctions()) {
      if (f.name != c.callee) continue;
      return f.aggregate ? kMainSide : args;
    }
    const ast::FnDecl* fn = function(c.callee, body);
    if (!fn) {
      // C runs where it is called, and may read the event (a helper): the query's.
      return ctx_.c_functions.count(c.callee) ? kMainSide : args;
    }
    Body inner;
    if (body) inner.calls = body->calls;
    // Recursion and nesting too deep are the checker's errors; the side hardly matters.
    if (std::find(inner.calls.begin(), inner.calls.end(), fn) != inner.calls.end() ||
        inner.calls.size() >= kMaxFnDepth || fn->params.size() != c.args.size()) {
      return kMainSide;
    }
    // A body's side depends on its parameters' only: each (fn, sides) is read once, or
    // `fn f(x) = g(x) + g(x)` nested a few deep would be read exponentially often.
    auto known = bodies_.find({fn, sides});
    if (known != bodies_.end()) return combine(args, known->second);
    inner.calls.push_back(fn);
    auto home = ctx_.fn_home.find(fn);
    inner.module = home == ctx_.fn_home.end() ? nullptr : home->second;
    for (size_t i = 0; i < fn->params.size(); ++i) inner.params[fn->params[i].name] = sides[i];
    int read = side(*fn->body, &inner);
    bodies_[{fn, sides}] = read;
    return combine(args, read);
  }

  /// The `fn` a call names, as the checker finds it: the calling module's own first.
  const ast::FnDecl* function(const std::string& callee, const Body* body) {
    if (body && body->module) {
      if (auto own = ctx_.module_fns.find(body->module); own != ctx_.module_fns.end()) {
        if (auto it = own->second.find(callee); it != own->second.end()) return it->second;
      }
    }
    auto it = ctx_.decls.fns.find(callee);
    return it == ctx_.decls.fns.end() ? nullptr : it->second;
  }

  const Context& ctx_;
  const std::vector<ResolvedJoin>& joins_;
  std::map<std::pair<const ast::FnDecl*, std::vector<int>>, int> bodies_;
};

/// Whether a join can keep a value of type `t`: numbers, pointers and text.
bool storable(const Type* t) {
  if (t->isError() || t->isInteger() || t->isPointer() || t->kind == TypeKind::String) return true;
  return t->kind == TypeKind::Array && t->element->isInteger() && t->element->size == 1;
}

/// Whether two keys can be compared: numbers with numbers, pointers with pointers to the
/// same type (or `void *`).
bool sameKeyType(const Type* a, const Type* b) {
  if (a->isError() || b->isError()) return true;
  if (a->isInteger() && b->isInteger()) return true;
  if (!a->isPointer() || !b->isPointer()) return false;
  const Type* x = a->element;
  const Type* y = b->element;
  if (x->kind == TypeKind::Void || y->kind == TypeKind::Void) return true;
  return x->spelling == y->spelling;
}

/// Whether an expression reads from the join named `name` anywhere.
struct Mentions : ast::ExprVisitor<Mentions> {
  explicit Mentions(const std::string& name) : name(name) {}
  void visitMember(const ast::Member& m) {
    const ast::Identifier* base = joinBase(m);
    found = found || (base && base->name == name);
    visitChildren(m);
  }
  const std::string& name;
  bool found = false;
};

bool mentions(const ast::Expr& e, const std::string& name) {
  Mentions m(name);
  m.visit(e);
  return m.found;
}

Scope joinScope(ResolvedJoin& join) {
  Scope scope;
  scope.target = &join.probe.chain.back();
  scope.at_exit = &join.probe.at_exit;
  scope.func = &join.probe.func;
  scope.join_name = join.join->name;
  return scope;
}

/// `on a == b and c == d`: each equality between the joined event's side and the query's,
/// or an expression both sides have (`on rq`).
void splitKeys(Context& ctx, ResolvedJoin& join, const ast::Expr& on) {
  if (on.kind == ast::ExprKind::Binary) {
    const auto& b = ast::as<ast::Binary>(on);
    if (b.op == ast::BinaryOp::And) {
      splitKeys(ctx, join, *b.lhs);
      splitKeys(ctx, join, *b.rhs);
      return;
    }
    const std::string& name = join.join->name;
    bool left = mentions(*b.lhs, name);
    bool right = mentions(*b.rhs, name);
    if (b.op == ast::BinaryOp::Eq && left != right) {
      join.keys.push_back(left ? JoinKey{b.lhs.get(), b.rhs.get()} : JoinKey{b.rhs.get(), b.lhs.get()});
      return;
    }
  }
  if (mentions(on, join.join->name)) {
    ctx.diags
        .report(DiagKind::JoinMisuse, on.range,
                fmt::format("`on` needs `==` between a value of `{0}` and one of the query's own event",
                            join.join->name))
        .note(fmt::format("write `on {0}.x == x`, or `on x` when both events call it `x`; "
                          "several keys are joined with `and`",
                          join.join->name));
    return;
  }
  join.keys.push_back(JoinKey{&on, &on});
}

}  // namespace

void resolveJoins(Context& ctx, ResolvedQuery& query) {
  for (const ast::Join& join : query.query->clauses.joins) {
    ResolvedJoin& resolved = query.joins.emplace_back();
    resolved.join = &join;
    if (join.within) resolved.within_ns = join.within->value;
    bool resolved_all = true;
    for (const ast::Target& target : join.source.chain) {
      if (std::holds_alternative<ast::PacketTarget>(target.kind)) {
        ctx.diags.report(DiagKind::Unsupported, target.range, "a join's source cannot be `packet`")
            .note("join a function or tracepoint that takes the `struct sk_buff *`");
        resolved_all = false;
        continue;
      }
      std::optional<ResolvedTarget> rt = resolveTarget(ctx, target);
      resolved_all = resolved_all && rt.has_value();
      if (rt) resolved.probe.chain.push_back(std::move(*rt));
    }
    if (!resolved_all) resolved.probe.chain.clear();
    if (!resolved.probe.chain.empty() && firesAtReturn(resolved.probe.chain.back())) resolved.probe.at_exit = true;
  }
}

void checkJoins(Context& ctx, ResolvedQuery& query) {
  for (size_t j = 0; j < query.joins.size(); ++j) {
    ResolvedJoin& join = query.joins[j];
    const ast::Join& decl = *join.join;
    // A second join of a name is another source of the first: its events wait in the
    // first's map (`within`, `optional` and `keep` are the first's to say).
    for (size_t k = 0; k < j && !join.feeds; ++k) {
      if (query.joins[k].join->name != decl.name) continue;
      join.feeds = static_cast<uint32_t>(k);
      if (decl.within || decl.optional || decl.keep) {
        ctx.diags
            .report(DiagKind::JoinMisuse, decl.name_range,
                    fmt::format("`{}` is another source of the join named `{}` first: `within`, "
                                "`optional` and `keep` go on that one",
                                decl.name, decl.name))
            .note(query.joins[k].join->name_range, "the first is here");
      }
    }
    if (join.probe.chain.empty()) continue;
    // Captures name the source's arguments, as in the query's own probes.
    for (const ResolvedTarget& target : join.probe.chain) {
      const std::optional<ast::CaptureList>* captures = target.target->captures();
      if (!captures || !*captures) continue;
      Scope scope = joinScope(join);
      scope.target = &target;
      ExprChecker checker(ctx, scope, join.probe.exprs);
      for (const ast::Capture& capture : (*captures)->items) {
        if (capture.expr) checker.check(*capture.expr);
      }
    }
    Scope scope = joinScope(join);
    if (decl.where) {
      Scope where_scope = scope;
      where_scope.in_where = true;
      const Type* t = ExprChecker(ctx, where_scope, join.probe.exprs).check(*decl.where);
      if (!isTruthy(t)) {
        ctx.diags.report(DiagKind::TypeMismatch, decl.where->range,
                         fmt::format("`where` needs a condition, not a `{}`", t->spelling));
      }
    }
    splitKeys(ctx, join, *decl.on);
    ExprChecker checker(ctx, scope, join.probe.exprs);
    for (const JoinKey& key : join.keys) checker.check(*key.joined);

    // A source joined with itself: each event would find the one it just kept.
    for (const ResolvedProbe& probe : query.probes) {
      if (decl.where || probe.chain.empty()) continue;
      if (probe.chain.back().description != join.probe.chain.back().description) continue;
      ctx.diags
          .report(DiagKind::SelfJoin, decl.source.range,
                  fmt::format("the query joins {} with itself", join.probe.chain.back().description))
          .note("add a `where` to the join that tells its events from the query's (a state, "
                "an argument)");
    }
  }
}

void checkJoinKeys(Context& ctx, ResolvedQuery& query, ResolvedProbe& probe) {
  for (ResolvedJoin& join : query.joins) {
    if (join.probe.chain.empty()) continue;
    Scope scope;
    scope.target = &probe.chain.back();
    scope.at_exit = &probe.at_exit;
    scope.func = &probe.func;
    ExprChecker checker(ctx, scope, probe.exprs);
    for (const JoinKey& key : join.keys) {
      const Type* mine = checker.check(*key.main);
      const Type* theirs = join.probe.exprs.at(key.joined).type;
      auto keyable = [](const Type* t) { return t->isError() || t->isInteger() || t->isPointer(); };
      if (!keyable(mine) || !keyable(theirs)) {
        const ast::Expr& bad = keyable(mine) ? *key.joined : *key.main;
        ctx.diags
            .report(DiagKind::JoinKeyMismatch, bad.range,
                    fmt::format("a join key is a number or a pointer, not a `{}`",
                                (keyable(mine) ? theirs : mine)->spelling))
            .note("join on an id, a pointer or an address (`on tid`, `on rq`)");
      } else if (!sameKeyType(mine, theirs)) {
        SourceRange at = key.main->range;
        if (key.main != key.joined) {
          at.begin = std::min(at.begin, key.joined->range.begin);
          at.end = std::max(at.end, key.joined->range.end);
        }
        ctx.diags
            .report(DiagKind::JoinKeyMismatch, at,
                    fmt::format("`on` compares `{}` ({}) with `{}` (the query's)", theirs->spelling,
                                join.join->name, mine->spelling))
            .note("a key matches only a value of the same type; cast one side if they are the "
                  "same thing");
      }
    }
  }
}

void checkJoinFeeders(Context& ctx, ResolvedQuery& query) {
  for (ResolvedJoin& feeder : query.joins) {
    if (!feeder.feeds || feeder.probe.chain.empty()) continue;
    const ResolvedJoin& first = query.joins[*feeder.feeds];
    if (first.probe.chain.empty()) continue;
    // The same key of the query's, in the same order: one lookup finds either source's.
    bool same_keys = feeder.keys.size() == first.keys.size();
    for (size_t k = 0; same_keys && k < feeder.keys.size(); ++k) {
      same_keys = ast::sameExpr(*feeder.keys[k].main, *first.keys[k].main);
    }
    if (!same_keys) {
      ctx.diags
          .report(DiagKind::JoinKeyMismatch, feeder.join->on->range,
                  fmt::format("every source of `{}` is looked up by the same value of the query's: "
                              "this `on` differs from the first's",
                              feeder.join->name))
          .note(first.join->on->range, "the first source's `on`");
      continue;
    }
    // What the query reads through `NAME.`, as this source sees it.
    ExprChecker checker(ctx, joinScope(feeder), feeder.probe.exprs);
    for (const ast::Expr* e : first.stored) {
      const Type* mine = checker.check(*e);
      const Type* theirs = first.probe.exprs.at(e).type;
      if (mine->isError() || theirs->isError()) continue;
      bool text = [](const Type* t) { return t->kind == TypeKind::String || t->kind == TypeKind::Array; }(mine);
      bool their_text = theirs->kind == TypeKind::String || theirs->kind == TypeKind::Array;
      if (!storable(mine) || text != their_text) {
        ctx.diags.report(DiagKind::JoinMisuse, e->range,
                         fmt::format("this is a `{}` in {} but a `{}` in {}, the first source of `{}`",
                                     mine->spelling, feeder.probe.chain.back().description,
                                     theirs->spelling, first.probe.chain.back().description,
                                     feeder.join->name));
      }
    }
    feeder.stored = first.stored;
  }
}

// ---- the checker's side --------------------------------------------------------------

std::optional<uint32_t> ExprChecker::joinedOnly(const ast::Expr& e) const {
  if (!scope_.joins) return std::nullopt;
  int side = SideOf(ctx_, *scope_.joins)(e);
  if (side < 0) return std::nullopt;
  return static_cast<uint32_t>(side);
}

const Type* ExprChecker::joined(const ast::Expr& e, uint32_t j) {
  ResolvedJoin& join = (*scope_.joins)[j];
  auto failed = [&] {
    ExprInfo info;
    info.type = error();
    out_[&e] = info;
    return error();
  };
  if (join.probe.chain.empty()) return failed();  // its source did not resolve
  std::optional<uint32_t> slot;
  for (uint32_t i = 0; i < join.stored.size() && !slot; ++i) {
    if (ast::sameExpr(*join.stored[i], e)) slot = i;
  }
  if (!slot) {
    const Type* type = ExprChecker(ctx_, joinScope(join), join.probe.exprs).check(e);
    if (!storable(type)) {
      // A call may still be made in the query's event from values the join keeps
      // (`tuple(w.skb)` prints through `fmt`); anything else is a mistake.
      if (e.kind == ast::ExprKind::Call) return nullptr;
      report(DiagKind::JoinMisuse, e.range,
             fmt::format("{} is a `{}`; a join keeps numbers, pointers and text", quote(e),
                         type->spelling))
          .note("the join keeps what its event saw: name the members the query needs "
                "(`w.p->pid`, not `*w.p`)");
      return failed();
    }
    slot = static_cast<uint32_t>(join.stored.size());
    join.stored.push_back(&e);
  }
  ExprInfo info = join.probe.exprs.at(join.stored[*slot]);
  info.ref = Ref::Joined;
  info.index = j;
  info.slot = *slot;
  info.constant = false;
  const Type* type = info.type;
  out_[&e] = std::move(info);
  return type;
}

std::optional<ExprInfo> ExprChecker::joinNameMisuse(const ast::Expr& e) {
  auto joins = [&] {
    std::string list;
    if (scope_.joins) {
      for (const ResolvedJoin& join : *scope_.joins) {
        list += (list.empty() ? "`" : ", `") + join.join->name + "`";
      }
    }
    return list;
  };
  if (e.kind == ast::ExprKind::Identifier && scope_.joins) {
    const std::string& name = ast::as<ast::Identifier>(e).name;
    if (!joinNamed(*scope_.joins, name)) return std::nullopt;
    report(DiagKind::JoinMisuse, e.range,
           fmt::format("`{}` names a joined event, not a value", name))
        .note(fmt::format("read what it saw as `{}.NAME` (`{}.time`, `{}.pid`)", name, name, name));
    ExprInfo info;
    info.type = error();
    return info;
  }
  const ast::Identifier* base = joinBase(e);
  if (!base || base->name == scope_.join_name) return std::nullopt;
  if (scope_.joins && joinNamed(*scope_.joins, base->name)) return std::nullopt;
  // `foo.x` where `foo` is no name at all: most likely a join's name, misspelled.
  if (ctx_.decls.lets.count(base->name) || ctx_.decls.fns.count(base->name)) return std::nullopt;
  for (const ProbeArg& arg : args()) {
    if (arg.name == base->name) return std::nullopt;
  }
  for (const BuiltinVariable& v : builtinVariables()) {
    if (v.name == base->name) return std::nullopt;
  }
  if (argNumber(base->name)) return std::nullopt;
  std::string list = joins();
  bool bpftrace = base->name == "args" && list.empty();  // bpftrace's `args.NAME`
  Diagnostic& d = report(DiagKind::UnknownName, base->range,
                         bpftrace ? "unknown name `args`"
                                  : fmt::format("`{}` is not a join of this query", base->name));
  if (bpftrace && bpftraceArgs(d)) {
  } else if (list.empty()) {
    d.note(fmt::format("`{0}.time` reads a joined event's value: `join SOURCE as {0} on KEY`",
                       base->name));
  } else {
    d.note(fmt::format("its joins are {}", list));
  }
  ExprInfo info;
  info.type = error();
  return info;
}

}  // namespace kq::sema
