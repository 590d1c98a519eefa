// Which tracepoints of a query are typed by their classic record rather than by their BTF
// handler. A tracepoint with a handler attaches as tp_btf, its arguments the handler's
// (`rq`, a `struct request *`); its classic record (tracefs' `format`: `bytes`, `rwbs`,
// what bpftrace's `args->bytes` reads) has fields the handler does not take as such. A
// query that names one of those (`hist(bytes)`) reads that probe through the classic
// tracepoint instead, whose record has them; the handler's arguments are then not in scope,
// and the checker says so where the query names one.
#include <fmt/format.h>

#include "compiler/ast/visitor.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"

namespace kq::sema {
namespace {

/// The names a probe's scope would look up in some expressions: free identifiers, and
/// for a join's source, the `x` of `NAME.x`.
class NamesUsed : public ast::ExprVisitor<NamesUsed> {
 public:
  /// `joins`: the query's join names, whose `NAME.x` reads the join's event, not this one;
  /// `through`: the join whose source this is (its `NAME.x` are its names), or empty.
  NamesUsed(const std::vector<std::string>& joins, std::string through)
      : joins_(joins), through_(std::move(through)) {}

  void visitIdentifier(const ast::Identifier& id) {
    if (through_.empty()) names.push_back(id.name);
  }
  void visitMember(const ast::Member& m) {
    if (!m.arrow && m.base->kind == ast::ExprKind::Identifier) {
      const std::string& base = ast::as<ast::Identifier>(*m.base).name;
      if (!through_.empty() && base == through_) {
        names.push_back(m.member);
        return;
      }
      for (const std::string& join : joins_) {
        if (join == base) return;
      }
    }
    visitChildren(m);
  }
  /// The free identifiers of `e`, whatever `through` says (a join's own `where`).
  void own(const ast::Expr& e) {
    std::string through = std::exchange(through_, "");
    visit(e);
    through_ = std::move(through);
  }

  std::vector<std::string> names;

 private:
  const std::vector<std::string>& joins_;
  std::string through_;
};

/// Whether `on`'s part `e` (split at `and`) names the join `join`: else it is `on x`, the
/// same expression on both sides.
bool mentionsJoin(const ast::Expr& e, const std::string& join) {
  std::vector<std::string> none;
  NamesUsed used(none, join);
  used.visit(e);
  return !used.names.empty();
}

void onParts(const ast::Expr& on, std::vector<const ast::Expr*>& out) {
  if (on.kind == ast::ExprKind::Binary) {
    const auto& b = ast::as<ast::Binary>(on);
    if (b.op == ast::BinaryOp::And) {
      onParts(*b.lhs, out);
      onParts(*b.rhs, out);
      return;
    }
  }
  out.push_back(&on);
}

/// The first of `names` that only the classic record of `target` has, if any.
const std::string* recordOnly(Context& ctx, const ResolvedTarget& target,
                              const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    bool field = false;
    for (const ProbeArg& f : target.record_fields) field = field || f.name == name;
    if (!field) continue;
    bool taken = ctx.decls.lets.count(name) || ctx.decls.fns.count(name);
    for (const ProbeArg& arg : target.args) taken = taken || arg.name == name;
    for (const BuiltinVariable& b : builtinVariables()) taken = taken || b.name == name;
    if (!taken) {
      // A property takes the name only where it applies: `saddr` of an skb is not
      // inet_sock_set_state's `saddr`, whose handler takes a `struct sock *`.
      ctx.loadProperties(name);
      auto property = ctx.properties.find(name);
      for (size_t i = 0; property != ctx.properties.end() && i < property->second.size(); ++i) {
        const ast::FnDecl& fn = *property->second[i];
        if (fn.params.empty() || !fn.params[0].type) continue;
        const Type* wanted = resolveTypeName(ctx, *fn.params[0].type);
        for (const ProbeArg& arg : target.args) taken = taken || sameType(arg.type, wanted);
      }
    }
    if (!taken) return &name;
  }
  return nullptr;
}

/// Types `target` by its record when `names` holds a field only the record has.
void choose(Context& ctx, ResolvedTarget& target, const std::vector<std::string>& names) {
  if (target.record_fields.empty()) return;
  if (const std::string* field = recordOnly(ctx, target, names)) typeByRecord(target, *field);
}

}  // namespace

void chooseTracepointRecords(Context& ctx, ResolvedQuery& query) {
  const ast::Clauses& clauses = query.query->clauses;
  std::vector<std::string> joins;
  for (const ast::Join& join : clauses.joins) joins.push_back(join.name);
  // What the query's clauses read, for the last target of each probe and for each join.
  auto clausesRead = [&](NamesUsed& used) {
    if (clauses.where) used.visit(*clauses.where);
    for (const ast::ExprPtr& key : clauses.group_by) used.visit(*key);
    for (const ast::SelectItem& item : clauses.select) used.visit(*item.expr);
  };
  auto capturesRead = [](NamesUsed& used, const ResolvedTarget& target) {
    const std::optional<ast::CaptureList>* captures = target.target->captures();
    if (!captures || !*captures) return;
    for (const ast::Capture& c : (*captures)->items) {
      if (c.expr) used.own(*c.expr);
    }
  };

  for (ResolvedProbe& probe : query.probes) {
    for (size_t i = 0; i < probe.chain.size(); ++i) {
      ResolvedTarget& target = probe.chain[i];
      if (target.record_fields.empty()) continue;
      NamesUsed used(joins, "");
      capturesRead(used, target);
      if (i + 1 == probe.chain.size()) {
        clausesRead(used);
        for (const ast::Join& join : clauses.joins) {
          if (join.on) used.visit(*join.on);
        }
      }
      choose(ctx, target, used.names);
    }
  }
  for (ResolvedJoin& join : query.joins) {
    if (join.probe.chain.empty()) continue;
    for (size_t i = 0; i < join.probe.chain.size(); ++i) {
      ResolvedTarget& target = join.probe.chain[i];
      if (target.record_fields.empty()) continue;
      NamesUsed used(joins, join.join->name);
      capturesRead(used, target);
      if (i + 1 == join.probe.chain.size()) {
        if (join.join->where) used.own(*join.join->where);
        clausesRead(used);
        for (const ast::Join& other : clauses.joins) {
          if (!other.on) continue;
          std::vector<const ast::Expr*> parts;
          onParts(*other.on, parts);
          for (const ast::Expr* part : parts) {
            // `on x` (naming no join) is `x` on both sides: this source's too.
            if (&other == join.join && !mentionsJoin(*part, join.join->name)) {
              used.own(*part);
            } else {
              used.visit(*part);
            }
          }
        }
      }
      choose(ctx, target, used.names);
    }
  }
}

}  // namespace kq::sema
