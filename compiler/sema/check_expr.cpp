// The type checker: every expression of every query, in the scope of each of its probes.
// Records each expression's type and meaning in the probe's ExprTable.
#include <bpf/btf.h>

#include <algorithm>

#include <fmt/format.h>

#include "compiler/ast/dump.h"
#include "compiler/ast/visitor.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"

namespace kq::sema {
namespace {

/// What names mean where an expression is checked.
struct Scope {
  /// The probe target whose arguments are in scope; null in declarations.
  const ResolvedTarget* target = nullptr;
  /// A function body's parameters, bound to the types of a call's arguments.
  std::vector<std::pair<std::string, const Type*>> params;
  /// Set when the expression needs the probe to run at function exit.
  bool* at_exit = nullptr;
  /// Functions being expanded, outermost first (to catch recursion).
  std::vector<const ast::FnDecl*> calls;
  /// Whether aggregates may appear here (directly in a `select` item).
  bool aggregates_allowed = false;
};

constexpr size_t kMaxFnDepth = 16;

std::string quote(const SourceManager& sources, const ast::Expr& e) {
  const std::string& text = sources.file(e.range.file).text();
  std::string s = text.substr(e.range.begin, e.range.end - e.range.begin);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return "`" + s + "`";
}

bool isComparison(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Lt: case ast::BinaryOp::Le: case ast::BinaryOp::Gt:
    case ast::BinaryOp::Ge: case ast::BinaryOp::Eq: case ast::BinaryOp::Ne:
      return true;
    default:
      return false;
  }
}

bool isTruthy(const Type* t) {
  return t->isError() || t->isInteger() || t->isPointer();
}

class ExprChecker {
 public:
  ExprChecker(Context& ctx, Scope scope, ExprTable& out)
      : ctx_(ctx), scope_(std::move(scope)), out_(out) {}

  const Type* check(const ast::Expr& e) {
    ExprInfo info;
    switch (e.kind) {
      case ast::ExprKind::Integer: {
        const auto& lit = ast::as<ast::IntegerLiteral>(e);
        info.type = lit.value > INT64_MAX ? ctx_.types.u64() : ctx_.types.s64();
        info.constant = true;
        break;
      }
      case ast::ExprKind::String:
        info.type = ctx_.types.string();
        info.constant = true;
        break;
      case ast::ExprKind::Bool:
        info.type = ctx_.types.boolType();
        info.constant = true;
        break;
      case ast::ExprKind::Identifier:
        info = identifier(ast::as<ast::Identifier>(e));
        break;
      case ast::ExprKind::ReturnValue:
        info = returnValue(e);
        break;
      case ast::ExprKind::Call:
        info = call(ast::as<ast::Call>(e));
        break;
      case ast::ExprKind::Member:
        info = member(ast::as<ast::Member>(e));
        break;
      case ast::ExprKind::Index:
        info.type = index(ast::as<ast::Index>(e));
        break;
      case ast::ExprKind::Unary:
        info = unary(ast::as<ast::Unary>(e));
        break;
      case ast::ExprKind::Binary:
        info = binary(ast::as<ast::Binary>(e));
        break;
      case ast::ExprKind::Conditional:
        info = conditional(ast::as<ast::Conditional>(e));
        break;
      case ast::ExprKind::Cast:
        info.type = cast(ast::as<ast::Cast>(e));
        break;
    }
    if (!info.type) info.type = ctx_.types.error();
    const Type* type = info.type;
    out_[&e] = std::move(info);
    return type;
  }

  const ExprInfo& info(const ast::Expr& e) const { return out_.at(&e); }

 private:
  Diagnostic& report(DiagKind kind, SourceRange at, std::string message) {
    return ctx_.diags.report(kind, at, std::move(message));
  }
  std::string quote(const ast::Expr& e) const { return sema::quote(ctx_.sources, e); }
  const Type* error() const { return ctx_.types.error(); }

  // ---- names -------------------------------------------------------------------------

  const std::vector<ProbeArg>& args() const {
    static const std::vector<ProbeArg> none;
    return scope_.target ? scope_.target->args : none;
  }

  ExprInfo identifier(const ast::Identifier& id) {
    ExprInfo info;
    const std::string& name = id.name;
    for (uint32_t i = 0; i < scope_.params.size(); ++i) {
      if (scope_.params[i].first == name) {
        info.ref = Ref::Param;
        info.index = i;
        info.type = scope_.params[i].second;
        return info;
      }
    }
    for (const ProbeArg& arg : args()) {
      if (!arg.name.empty() && arg.name == name) {
        info.ref = Ref::Arg;
        info.index = arg.index;
        info.type = arg.type;
        return info;
      }
    }
    if (auto n = argNumber(name)) {
      if (scope_.target && *n < args().size()) {
        info.ref = Ref::Arg;
        info.index = *n;
        info.type = args()[*n].type;
        return info;
      }
      if (scope_.target) {
        report(DiagKind::UnknownName, id.range,
               fmt::format("`{}` has {} argument{}; `{}` is past the last", scope_.target->description,
                           args().size(), args().size() == 1 ? "" : "s", name));
        info.type = error();
        return info;
      }
    }
    if (name == "retval") return returnValue(id);
    const auto& builtins = builtinVariables();
    for (uint32_t i = 0; i < builtins.size(); ++i) {
      if (builtins[i].name != name) continue;
      info.ref = Ref::Builtin;
      info.index = i;
      info.type = builtins[i].type(ctx_.types);
      checkNeeds(builtins[i], id);
      return info;
    }
    if (auto it = ctx_.decls.lets.find(name); it != ctx_.decls.lets.end()) {
      info = ctx_.decls.let_info.count(it->second) ? ctx_.decls.let_info.at(it->second) : ExprInfo{};
      info.ref = Ref::Let;
      info.let = it->second;
      if (!info.type) info.type = error();  // its own error was reported
      return info;
    }
    if (auto e = ctx_.btf.findEnumerator(name)) {
      info.ref = Ref::Enumerator;
      info.value = e->value;
      info.type = ctx_.types.fromBtf(e->enum_type);
      info.constant = true;
      return info;
    }
    if (auto property = this->property(id)) return *property;
    unknownName(id);
    info.type = error();
    return info;
  }

  static std::optional<uint32_t> argNumber(const std::string& name) {
    if (name.size() < 4 || name.compare(0, 3, "arg") != 0) return std::nullopt;
    for (size_t i = 3; i < name.size(); ++i) {
      if (!isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
    }
    if (name.size() > 5) return std::nullopt;
    return static_cast<uint32_t>(std::stoul(name.substr(3)));
  }

  void checkNeeds(const BuiltinVariable& builtin, const ast::Expr& at) {
    if (!scope_.target) return;
    bool has_return = scope_.target->return_type != nullptr;
    if (builtin.needs == Needs::Exit) {
      if (!has_return) {
        report(DiagKind::NotAvailableHere, at.range,
               fmt::format("`{}` needs a probe with an exit, and {} has none", builtin.name,
                           scope_.target->description))
            .note("functions, syscalls and uprobes have exits; tracepoints do not");
        return;
      }
      if (scope_.at_exit) *scope_.at_exit = true;
    }
    bool traces_functions = scope_.target->target &&
                            (std::holds_alternative<ast::FunctionTarget>(scope_.target->target->kind) ||
                             std::holds_alternative<ast::UprobeTarget>(scope_.target->target->kind) ||
                             std::holds_alternative<ast::PacketTarget>(scope_.target->target->kind));
    if (builtin.needs == Needs::Function && !traces_functions) {
      report(DiagKind::NotAvailableHere, at.range,
             fmt::format("`{}` names a traced function, and {} traces none", builtin.name,
                         scope_.target->description));
    }
  }

  ExprInfo returnValue(const ast::Expr& e) {
    ExprInfo info;
    info.ref = Ref::Return;
    if (!scope_.target) {
      report(DiagKind::NotAvailableHere, e.range, "`return` is only meaningful inside a probe");
      info.type = error();
      return info;
    }
    if (!scope_.target->return_type) {
      report(DiagKind::NotAvailableHere, e.range,
             fmt::format("{} has no return value", scope_.target->description))
          .note("functions, syscalls and uprobes return values; tracepoints do not");
      info.type = error();
      return info;
    }
    if (scope_.target->return_type->kind == TypeKind::Void) {
      report(DiagKind::NotAvailableHere, e.range,
             fmt::format("`{}` returns void", scope_.target->description));
      info.type = error();
      return info;
    }
    if (scope_.at_exit) *scope_.at_exit = true;
    info.type = scope_.target->return_type;
    return info;
  }

  /// A bare name that is a property (`mark` for `skb->mark`) of exactly one argument.
  std::optional<ExprInfo> property(const ast::Identifier& id) {
    if (!scope_.target) return std::nullopt;
    ctx_.loadProperties();
    auto it = ctx_.properties.find(id.name);
    if (it == ctx_.properties.end()) return std::nullopt;
    for (const ast::FnDecl* fn : it->second) {
      const Type* wanted = paramType(*fn, 0);
      if (wanted->isError()) continue;
      std::vector<const ProbeArg*> matches;
      for (const ProbeArg& arg : args()) {
        if (!arg.name.empty() && sameType(arg.type, wanted)) matches.push_back(&arg);
      }
      if (matches.empty()) continue;
      if (matches.size() > 1) {
        Diagnostic& diag = report(
            DiagKind::AmbiguousProperty, id.range,
            fmt::format("`{}` is ambiguous: {} has {} arguments of type `{}`", id.name,
                        scope_.target->description, matches.size(), wanted->spelling));
        std::string forms;
        for (const ProbeArg* arg : matches) {
          forms += fmt::format("{}`{}({})`", forms.empty() ? "" : " or ", id.name, arg->name);
        }
        diag.note(fmt::format("name the argument: {}", forms));
        ExprInfo info;
        info.type = error();
        return info;
      }
      ExprInfo info = expandFn(*fn, id, {matches[0]->type});
      info.ref = Ref::Property;
      info.index = matches[0]->index;
      return info;
    }
    return std::nullopt;
  }

  void unknownName(const ast::Identifier& id) {
    std::vector<std::string_view> candidates;
    for (const auto& [name, type] : scope_.params) candidates.push_back(name);
    for (const ProbeArg& arg : args()) {
      if (!arg.name.empty()) candidates.push_back(arg.name);
    }
    for (const BuiltinVariable& b : builtinVariables()) candidates.push_back(b.name);
    for (const auto& [name, let] : ctx_.decls.lets) candidates.push_back(name);
    // Properties this probe could use bare.
    ctx_.loadProperties();
    for (const auto& [name, fns] : ctx_.properties) {
      const Type* wanted = paramType(*fns.front(), 0);
      for (const ProbeArg& arg : args()) {
        if (!wanted->isError() && sameType(arg.type, wanted)) {
          candidates.push_back(name);
          break;
        }
      }
    }
    Diagnostic& diag = report(DiagKind::UnknownName, id.range, fmt::format("unknown name `{}`", id.name));
    if (auto close = closestName(id.name, candidates)) {
      diag.note(fmt::format("did you mean `{}`?", *close));
      return;
    }
    // A property of a type this probe does not have, or an argument only some globbed
    // functions have.
    if (ctx_.properties.count(id.name)) {
      const Type* wanted = paramType(*ctx_.properties.at(id.name).front(), 0);
      diag.note(fmt::format("`{}` is a property of `{}`, and {} has no argument of that type",
                            id.name, wanted->spelling,
                            scope_.target ? scope_.target->description : "this declaration"));
      return;
    }
    if (scope_.target && scope_.target->functions.size() > 1) {
      for (const btf::Function& f : scope_.target->functions) {
        for (const btf::FunctionParam& p : f.params) {
          if (p.name != id.name) continue;
          diag.kind = DiagKind::ArgumentNotShared;
          diag.message = fmt::format("`{}` is not an argument of every function matching `{}`",
                                     id.name, scope_.target->description);
          diag.note(fmt::format("`{}` has it; use `argN` for arguments that differ", f.name));
          return;
        }
      }
    }
    if (scope_.target && !args().empty()) {
      std::string names;
      for (const ProbeArg& arg : args()) {
        names += fmt::format("{}`{}`", names.empty() ? "" : ", ",
                             arg.name.empty() ? fmt::format("arg{}", arg.index) : arg.name);
      }
      diag.note(fmt::format("{} has {}", scope_.target->description, names));
    }
  }

  // ---- calls -------------------------------------------------------------------------

  ExprInfo call(const ast::Call& c) {
    ExprInfo info;
    const auto& functions = builtinFunctions();
    for (uint32_t i = 0; i < functions.size(); ++i) {
      const BuiltinFunction& f = functions[i];
      if (f.name != c.callee) continue;
      info.ref = Ref::BuiltinFunction;
      info.index = i;
      if (f.aggregate && !scope_.aggregates_allowed) {
        report(DiagKind::AggregateMisuse, c.range,
               fmt::format("`{}` is an aggregate; it can only be a `select` item", f.signature))
            .note("for example: trace ... select comm, count() group by comm");
        info.type = error();
        return info;
      }
      bool inner_allowed = scope_.aggregates_allowed;
      scope_.aggregates_allowed = false;  // no aggregates inside aggregates
      BuiltinCall bc{c, {}, ctx_.types, ctx_.diags};
      for (const ast::ExprPtr& arg : c.args) bc.args.push_back(check(*arg));
      scope_.aggregates_allowed = inner_allowed;
      if (c.args.size() < f.min_args || c.args.size() > f.max_args) {
        report(DiagKind::WrongArgumentCount, c.range,
               fmt::format("`{}` takes {}, not {}", f.signature, countText(f.min_args, f.max_args),
                           c.args.size()));
        info.type = error();
        return info;
      }
      info.type = f.check(bc);
      return info;
    }
    auto fn = ctx_.decls.fns.find(c.callee);
    if (fn == ctx_.decls.fns.end()) {
      unknownCall(c);
      for (const ast::ExprPtr& arg : c.args) check(*arg);
      info.type = error();
      return info;
    }
    std::vector<const Type*> arg_types;
    for (const ast::ExprPtr& arg : c.args) arg_types.push_back(check(*arg));
    if (c.args.size() != fn->second->params.size()) {
      report(DiagKind::WrongArgumentCount, c.range,
             fmt::format("`{}` takes {} argument{}, not {}", c.callee, fn->second->params.size(),
                         fn->second->params.size() == 1 ? "" : "s", c.args.size()))
          .note(fn->second->name_range, "declared here");
      info.type = error();
      return info;
    }
    for (size_t i = 0; i < arg_types.size(); ++i) {
      const Type* wanted = paramType(*fn->second, i);
      if (wanted && !arg_types[i]->isError() && !wanted->isError() &&
          !assignable(arg_types[i], wanted)) {
        report(DiagKind::TypeMismatch, c.args[i]->range,
               fmt::format("`{}` takes `{}` as `{}`, not `{}`", c.callee, wanted->spelling,
                           fn->second->params[i].name, arg_types[i]->spelling));
        info.type = error();
        return info;
      }
    }
    info = expandFn(*fn->second, c, arg_types);
    info.ref = Ref::Fn;
    return info;
  }

  static std::string countText(size_t lo, size_t hi) {
    auto args = [](size_t n) { return fmt::format("{} argument{}", n, n == 1 ? "" : "s"); };
    if (lo == hi) return lo == 0 ? "no arguments" : args(lo);
    if (hi >= 16) return fmt::format("at least {}", args(lo));
    return fmt::format("{} to {} arguments", lo, hi);
  }

  void unknownCall(const ast::Call& c) {
    std::vector<std::string_view> candidates;
    for (const BuiltinFunction& f : builtinFunctions()) candidates.push_back(f.name);
    for (const auto& [name, fn] : ctx_.decls.fns) candidates.push_back(name);
    Diagnostic& diag = report(DiagKind::UnknownCall, c.callee_range,
                              fmt::format("no function `{}`", c.callee));
    if (auto close = closestName(c.callee, candidates)) {
      diag.note(fmt::format("did you mean `{}`?", *close));
      return;
    }
    ctx_.loadProperties();
    for (const auto& module : ctx_.modules) {
      for (const ast::Item& item : module->items) {
        const auto* fn = std::get_if<ast::FnDecl>(&item);
        if (fn && fn->name == c.callee) {
          const std::string& file = ctx_.sources.file(module->file).name();
          std::string name = file.substr(7, file.size() - 10);  // stdlib/<name>.kq
          diag.note(fmt::format("`{}` is in the stdlib module `{}`: add `use {}`", c.callee, name, name));
          return;
        }
      }
    }
  }

  /// The type of a function's parameter `i`: its declared type, or (untyped) anything.
  const Type* paramType(const ast::FnDecl& fn, size_t i) {
    if (!fn.params[i].type) return nullptr;
    return resolveTypeName(ctx_, *fn.params[i].type);
  }

  /// Checks a function's body with its parameters bound to `arg_types`, for one use.
  ExprInfo expandFn(const ast::FnDecl& fn, const ast::Expr& use, std::vector<const Type*> arg_types) {
    ExprInfo info;
    info.fn = &fn;
    for (const ast::FnDecl* active : scope_.calls) {
      if (active == &fn || scope_.calls.size() >= kMaxFnDepth) {
        report(DiagKind::RecursiveFunction, use.range,
               fmt::format("`{}` calls itself; kq functions are expanded inline and cannot recurse",
                           fn.name))
            .note(fn.name_range, "declared here");
        info.type = error();
        return info;
      }
    }
    Scope inner;
    inner.target = scope_.target;
    inner.at_exit = scope_.at_exit;
    inner.calls = scope_.calls;
    inner.calls.push_back(&fn);
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Type* declared = fn.params[i].type ? paramType(fn, i) : nullptr;
      inner.params.emplace_back(fn.params[i].name, declared ? declared : arg_types[i]);
    }
    // The body sees its parameters, builtins and declarations, not the probe's arguments.
    ResolvedTarget body_target;
    if (scope_.target) {
      body_target = *scope_.target;
      body_target.args.clear();
      inner.target = &body_target;
    }
    info.body = std::make_shared<ExprTable>();
    ExprChecker body(ctx_, std::move(inner), *info.body);
    info.type = body.check(*fn.body);
    return info;
  }

  // ---- members and indexing ----------------------------------------------------------

  ExprInfo member(const ast::Member& m) {
    ExprInfo info;
    info.type = error();
    const Type* base = check(*m.base);
    if (base->isError()) return info;
    const Type* record = base;
    if (m.arrow) {
      if (base->isRecord()) {
        report(DiagKind::WrongMemberOperator, m.range,
               fmt::format("{} is a `{}`, not a pointer: write `{}.{}`", quote(*m.base),
                           base->spelling, quoteText(*m.base), m.member));
        return info;
      }
      if (!base->isRecordPointer()) {
        report(DiagKind::NotARecord, m.member_range,
               fmt::format("{} is `{}`, which has no members", quote(*m.base), base->spelling));
        return info;
      }
      record = base->element;
    } else {
      if (base->isRecordPointer()) {
        report(DiagKind::WrongMemberOperator, m.range,
               fmt::format("{} is a pointer to `{}`: write `{}->{}`", quote(*m.base),
                           base->element->spelling, quoteText(*m.base), m.member));
        return info;
      }
      if (!base->isRecord()) {
        report(DiagKind::NotARecord, m.member_range,
               fmt::format("{} is `{}`, which has no members", quote(*m.base), base->spelling));
        return info;
      }
    }
    if (record->incomplete) {
      report(DiagKind::NotARecord, m.member_range,
             fmt::format("`{}` is only declared in the kernel's BTF; its members are unknown",
                         record->spelling));
      return info;
    }
    auto path = ctx_.types.findMember(record, m.member);
    if (!path) {
      Diagnostic& diag = report(DiagKind::NoSuchMember, m.member_range,
                                fmt::format("`{}` has no member `{}`", record->spelling, m.member));
      std::vector<std::string> names = ctx_.types.memberNames(record);
      if (auto close = closestName(m.member, {names.begin(), names.end()})) {
        diag.note(fmt::format("did you mean `{}`?", *close));
      }
      return info;
    }
    info.type = path->type;
    info.member = std::move(*path);
    return info;
  }

  std::string quoteText(const ast::Expr& e) const {
    std::string q = quote(e);
    return q.substr(1, q.size() - 2);
  }

  const Type* index(const ast::Index& ix) {
    const Type* base = check(*ix.base);
    const Type* i = check(*ix.index);
    if (!i->isError() && !i->isInteger()) {
      report(DiagKind::TypeMismatch, ix.index->range,
             fmt::format("an index must be an integer, not `{}`", i->spelling));
      return error();
    }
    if (base->isError()) return error();
    if (base->kind == TypeKind::Array || (base->isPointer() && base->element->kind != TypeKind::Void)) {
      return base->element;
    }
    report(DiagKind::TypeMismatch, ix.base->range,
           fmt::format("{} is `{}`, which cannot be indexed", quote(*ix.base), base->spelling));
    return error();
  }

  // ---- operators ---------------------------------------------------------------------

  ExprInfo unary(const ast::Unary& u) {
    ExprInfo info;
    const Type* t = check(*u.operand);
    info.constant = info_constant(*u.operand);
    info.type = error();
    if (t->isError()) return info;
    switch (u.op) {
      case ast::UnaryOp::Negate:
      case ast::UnaryOp::Plus:
      case ast::UnaryOp::BitNot:
        if (!t->isInteger()) break;
        info.type = t->kind == TypeKind::Int ? t : ctx_.types.s64();
        return info;
      case ast::UnaryOp::LogicalNot:
        if (!isTruthy(t)) break;
        info.type = ctx_.types.boolType();
        return info;
      case ast::UnaryOp::Deref:
        if (!t->isPointer() || t->element->kind == TypeKind::Void) break;
        info.constant = false;
        info.type = t->element;
        return info;
      case ast::UnaryOp::AddressOf:
        if (u.operand->kind != ast::ExprKind::Member && u.operand->kind != ast::ExprKind::Index) {
          report(DiagKind::TypeMismatch, u.range,
                 fmt::format("`&` takes a member or an element, not {}", quote(*u.operand)));
          return info;
        }
        info.constant = false;
        info.type = ctx_.types.pointerTo(t);
        return info;
    }
    report(DiagKind::TypeMismatch, u.range,
           fmt::format("`{}` does not apply to {}, a `{}`", ast::spell(u.op), quote(*u.operand),
                       t->spelling));
    return info;
  }

  bool info_constant(const ast::Expr& e) const { return out_.at(&e).constant; }

  ExprInfo binary(const ast::Binary& b) {
    ExprInfo info;
    info.type = error();
    using Op = ast::BinaryOp;
    if (b.op == Op::And || b.op == Op::Or) {
      const Type* l = check(*b.lhs);
      const Type* r = check(*b.rhs);
      for (auto [side, type] : {std::pair{b.lhs.get(), l}, std::pair{b.rhs.get(), r}}) {
        if (!isTruthy(type)) {
          report(DiagKind::TypeMismatch, side->range,
                 fmt::format("`{}` needs conditions; {} is a `{}`", ast::spell(b.op),
                             quote(*side), type->spelling));
          return info;
        }
      }
      info.type = ctx_.types.boolType();
      info.constant = info_constant(*b.lhs) && info_constant(*b.rhs);
      return info;
    }

    const Type* l = check(*b.lhs);
    const Type* r = (isComparison(b.op) && l->kind == TypeKind::Enum &&
                     b.rhs->kind == ast::ExprKind::Identifier)
                        ? enumeratorOf(l, ast::as<ast::Identifier>(*b.rhs))
                        : check(*b.rhs);
    if (l->isError() || r->isError()) return info;
    info.constant = info_constant(*b.lhs) && info_constant(*b.rhs);

    if (b.op == Op::Match) {
      if (!l->isStringLike() || !r->isStringLike()) {
        report(DiagKind::TypeMismatch, b.op_range,
               fmt::format("`~` matches a string against a glob; {} is `{}` and {} is `{}`",
                           quote(*b.lhs), l->spelling, quote(*b.rhs), r->spelling));
        return info;
      }
      info.type = ctx_.types.boolType();
      return info;
    }
    if (isComparison(b.op)) {
      if (comparable(b, l, r)) info.type = ctx_.types.boolType();
      return info;
    }
    // Arithmetic and bit operations.
    bool additive = b.op == Op::Add || b.op == Op::Sub;
    if (additive && l->isPointer() && r->isInteger()) {
      info.type = l;
      return info;
    }
    if (b.op == Op::Add && l->isInteger() && r->isPointer()) {
      info.type = r;
      return info;
    }
    if (b.op == Op::Sub && l->isPointer() && r->isPointer()) {
      info.type = ctx_.types.s64();
      return info;
    }
    if (l->isInteger() && r->isInteger()) {
      info.type = arithmetic(l, r);
      return info;
    }
    const ast::Expr& culprit = l->isInteger() ? *b.rhs : *b.lhs;
    const Type* bad = l->isInteger() ? r : l;
    report(DiagKind::TypeMismatch, culprit.range,
           fmt::format("`{}` needs integers; {} is `{}`", ast::spell(b.op), quote(culprit),
                       bad->spelling));
    return info;
  }

  /// C's usual arithmetic conversions, simplified: the wider type wins; at least 32 bits.
  const Type* arithmetic(const Type* l, const Type* r) {
    uint32_t size = std::max({l->size, r->size, 4u});
    bool l_signed = l->is_signed || l->kind == TypeKind::Bool;
    bool r_signed = r->is_signed || r->kind == TypeKind::Bool;
    bool is_signed = (l_signed && r_signed) || (l_signed && l->size > r->size) ||
                     (r_signed && r->size > l->size);
    return ctx_.types.integer(size, is_signed);
  }

  /// In `reason == NAME`, NAME is looked up among `enum`'s own enumerators first.
  const Type* enumeratorOf(const Type* enum_type, const ast::Identifier& id) {
    const ::btf_type* raw = enum_type->btf.get();
    for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
      uint32_t off = btf_is_enum64(raw) ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off;
      if (id.name != btf__name_by_offset(enum_type->btf.file->btf, off)) continue;
      ExprInfo info;
      info.ref = Ref::Enumerator;
      info.value = btf_is_enum64(raw) ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(raw)[i]))
                                      : btf_enum(raw)[i].val;
      info.type = enum_type;
      info.constant = true;
      out_[&id] = info;
      return enum_type;
    }
    // Not one of its enumerators: an argument, a constant, or a mistake.
    bool known = ctx_.btf.findEnumerator(id.name) || ctx_.decls.lets.count(id.name);
    for (const ProbeArg& arg : args()) known = known || arg.name == id.name;
    for (const auto& p : scope_.params) known = known || p.first == id.name;
    for (const BuiltinVariable& b : builtinVariables()) known = known || b.name == id.name;
    if (known) return check(id);
    std::vector<std::string> names;
    for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
      uint32_t off = btf_is_enum64(raw) ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off;
      names.push_back(btf__name_by_offset(enum_type->btf.file->btf, off));
    }
    Diagnostic& diag = report(DiagKind::UnknownEnumerator, id.range,
                              fmt::format("`{}` has no enumerator `{}`", enum_type->spelling, id.name));
    if (auto close = closestName(id.name, {names.begin(), names.end()})) {
      diag.note(fmt::format("did you mean `{}`?", *close));
    }
    out_[&id] = ExprInfo{error()};
    return error();
  }

  bool comparable(const ast::Binary& b, const Type* l, const Type* r) {
    bool ordering = b.op != ast::BinaryOp::Eq && b.op != ast::BinaryOp::Ne;
    // Strings compare with strings (and char arrays or pointers, read as strings).
    if (l->kind == TypeKind::String || r->kind == TypeKind::String) {
      if (l->isStringLike() && r->isStringLike() && !ordering) return true;
      if (ordering && l->isStringLike() && r->isStringLike()) {
        report(DiagKind::TypeMismatch, b.op_range,
               fmt::format("strings compare with `==`, `!=` and `~`, not `{}`", ast::spell(b.op)));
        return false;
      }
    }
    if (l->kind == TypeKind::Enum && r->kind == TypeKind::Enum && l->btf != r->btf) {
      report(DiagKind::EnumMismatch, b.range,
             fmt::format("{} is `{}` but {} is `{}`", quote(*b.lhs), l->spelling, quote(*b.rhs),
                         r->spelling))
          .note("comparing enumerators of different enums is almost always a mistake");
      return false;
    }
    if (l->isInteger() && r->isInteger()) return true;
    if (l->isPointer() && r->isPointer()) return true;
    // A pointer against 0 (NULL) or an address.
    if ((l->isPointer() && r->isInteger()) || (l->isInteger() && r->isPointer())) {
      const ast::Expr& ptr = l->isPointer() ? *b.lhs : *b.rhs;
      const Type* ptr_type = l->isPointer() ? l : r;
      const ast::Expr& other = l->isPointer() ? *b.rhs : *b.lhs;
      bool null = other.kind == ast::ExprKind::Integer && ast::as<ast::IntegerLiteral>(other).value == 0;
      if (null || !ptr_type->isRecordPointer()) return true;
      pointerToRecord(ptr, ptr_type, other, l->isPointer() ? r : l);
      return false;
    }
    if (l->isRecordPointer() || r->isRecordPointer()) {
      bool left = l->isRecordPointer();
      pointerToRecord(left ? *b.lhs : *b.rhs, left ? l : r, left ? *b.rhs : *b.lhs, left ? r : l);
      return false;
    }
    if (l->isRecord() || r->isRecord()) {
      const ast::Expr& rec = l->isRecord() ? *b.lhs : *b.rhs;
      report(DiagKind::TypeMismatch, rec.range,
             fmt::format("{} is a `{}`; compare one of its members", quote(rec),
                         (l->isRecord() ? l : r)->spelling));
      return false;
    }
    report(DiagKind::TypeMismatch, b.op_range,
           fmt::format("cannot compare {} (`{}`) with {} (`{}`)", quote(*b.lhs), l->spelling,
                       quote(*b.rhs), r->spelling));
    return false;
  }

  /// `skb->dev == "eth0"`: suggest a member of the struct that compares with the other side.
  void pointerToRecord(const ast::Expr& ptr, const Type* ptr_type, const ast::Expr& other,
                       const Type* other_type) {
    Diagnostic& diag =
        report(DiagKind::TypeMismatch, ptr.range,
               fmt::format("{} is a pointer to `{}`; compare one of its members", quote(ptr),
                           ptr_type->element->spelling));
    std::vector<std::string> names = ctx_.types.memberNames(ptr_type->element);
    // `name` first (net_device, dentry, ...), then members in order; skip internal markers.
    std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return n == "name"; });
    for (const std::string& name : names) {
      if (name.rfind("__", 0) == 0) continue;
      auto path = ctx_.types.findMember(ptr_type->element, name);
      if (!path || (path->type->kind == TypeKind::Array && path->type->count == 0)) continue;
      bool fits = other_type->isStringLike() ? path->type->isStringLike()
                                             : path->type->kind == TypeKind::Int;
      if (fits) {
        diag.note(fmt::format("for example `{}->{}`", quoteText(ptr), name));
        return;
      }
    }
    (void)other;
  }

  ExprInfo conditional(const ast::Conditional& c) {
    ExprInfo info;
    const Type* cond = check(*c.cond);
    const Type* a = check(*c.then);
    const Type* b = check(*c.otherwise);
    info.type = error();
    if (!isTruthy(cond)) {
      report(DiagKind::TypeMismatch, c.cond->range,
             fmt::format("a condition must be an integer, pointer or bool, not `{}`", cond->spelling));
      return info;
    }
    if (a->isError() || b->isError()) return info;
    if (a->isInteger() && b->isInteger()) {
      info.type = arithmetic(a, b);
    } else if ((a->isStringLike() && b->isStringLike()) || (a->isPointer() && b->isPointer())) {
      info.type = a;
    } else {
      report(DiagKind::TypeMismatch, c.range,
             fmt::format("the branches of `?:` differ: `{}` and `{}`", a->spelling, b->spelling));
    }
    return info;
  }

  const Type* cast(const ast::Cast& c) {
    const Type* from = check(*c.operand);
    const Type* to = resolveTypeName(ctx_, c.type);
    if (from->isError() || to->isError()) return error();
    bool scalar_from = from->isInteger() || from->isPointer();
    bool scalar_to = to->isInteger() || to->isPointer();
    if (!scalar_from || !scalar_to) {
      report(DiagKind::InvalidCast, c.range,
             fmt::format("cannot cast {} from `{}` to `{}`", quote(*c.operand), from->spelling,
                         to->spelling))
          .note("casts convert between integers and pointers");
      return error();
    }
    return to;
  }

  bool sameType(const Type* a, const Type* b) const {
    if (a == b) return true;
    if (a->isPointer() && b->isPointer()) return sameType(a->element, b->element);
    if (a->isRecord() && b->isRecord()) return a->btf.resolved() == b->btf.resolved();
    return false;
  }

  bool assignable(const Type* from, const Type* to) const {
    if (sameType(from, to)) return true;
    if (from->isInteger() && to->isInteger()) return true;
    if (from->isPointer() && to->isPointer()) {
      return to->element->kind == TypeKind::Void || from->element->kind == TypeKind::Void ||
             sameType(from->element, to->element);
    }
    return from->isStringLike() && to->isStringLike();
  }

  Context& ctx_;
  Scope scope_;
  ExprTable& out_;
};

}  // namespace

void checkDeclarations(Context& ctx) {
  // Every constant, the script's and its modules'.
  for (const auto& [name, let] : ctx.decls.lets) {
    ExprTable table;
    ExprChecker checker(ctx, Scope{}, table);
    checker.check(*let->value);
    ExprInfo info = table.at(let->value.get());
    if (!info.constant && !info.type->isError()) {
      ctx.diags.report(DiagKind::NotAvailableHere, let->value->range,
                       fmt::format("`let {}` must be a constant", let->name))
          .note("use `fn` for values computed from a probe's arguments");
    }
    ctx.decls.let_info[let] = info;
  }
  // The script's functions whose parameters all have types are checked here, even if
  // unused; others (and the stdlib's) where they are called, with the arguments' types.
  for (const auto& [name, fn] : ctx.decls.fns) {
    if (!ctx.decls.origin[fn].empty()) continue;
    bool typed = true;
    for (const ast::Param& p : fn->params) typed = typed && p.type.has_value();
    if (!typed) continue;
    Scope scope;
    scope.calls.push_back(fn);
    for (const ast::Param& p : fn->params) {
      scope.params.emplace_back(p.name, resolveTypeName(ctx, *p.type));
    }
    ExprTable table;
    ExprChecker(ctx, std::move(scope), table).check(*fn->body);
  }
}

void checkQueries(Context& ctx, Program& program) {
  for (ResolvedQuery& query : program.queries) {
    const ast::Clauses& clauses = query.query->clauses;
    for (size_t p = 0; p < query.probes.size(); ++p) {
      ResolvedProbe& probe = query.probes[p];
      if (probe.chain.empty()) continue;
      // A clause shared by several probes is checked once per probe; Diagnostics drops the
      // repeats of an error they share.
      // Captures belong to their own target; clauses to the last one in a chain.
      for (const ResolvedTarget& target : probe.chain) {
        const ast::Target& ast_target = *target.target;
        const std::optional<ast::CaptureList>* captures = ast_target.captures();
        if (!captures || !*captures) continue;
        Scope scope;
        scope.target = &target;
        scope.at_exit = &probe.at_exit;
        ExprChecker checker(ctx, scope, probe.exprs);
        for (const ast::Capture& capture : (*captures)->items) {
          if (capture.expr) checker.check(*capture.expr);
        }
      }
      Scope scope;
      scope.target = &probe.chain.back();
      scope.at_exit = &probe.at_exit;
      ExprChecker checker(ctx, scope, probe.exprs);
      if (clauses.where) {
        const Type* t = checker.check(*clauses.where);
        if (!isTruthy(t)) {
          ctx.diags.report(DiagKind::TypeMismatch, clauses.where->range,
                               fmt::format("`where` needs a condition, not a `{}`", t->spelling));
        }
      }
      for (const ast::ExprPtr& key : clauses.group_by) checker.check(*key);
      Scope select_scope = scope;
      select_scope.aggregates_allowed = true;
      ExprChecker select_checker(ctx, select_scope, probe.exprs);
      for (const ast::SelectItem& item : clauses.select) {
        select_checker.check(*item.expr);
        const ExprInfo& info = probe.exprs.at(item.expr.get());
        if (info.ref == Ref::BuiltinFunction && builtinFunctions()[info.index].aggregate) {
          query.aggregates = true;
        }
      }
    }
  }
}

}  // namespace kq::sema
