// The type checker on names and calls: what an identifier refers to (a parameter, a probe
// argument, a builtin, a `let`, an enumerator or a property), `retval`, and calls of
// builtin functions and of `fn`s, which are expanded inline.
#include <bpf/btf.h>

#include <cctype>
#include <string>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/context.h"
#include "compiler/sema/expr_checker.h"

namespace kq::sema {

// ---- names -------------------------------------------------------------------------

const std::vector<ProbeArg>& ExprChecker::args() const {
  static const std::vector<ProbeArg> none;
  return scope_.target ? scope_.target->args : none;
}

ExprInfo ExprChecker::identifier(const ast::Identifier& id) {
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
      warnIfShadowing(id, arg);
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
    info.variable = &builtins[i];
    info.type = builtins[i].type(ctx_.types, ctx_.btf);
    if (info.type->isError()) {
      report(DiagKind::NotAvailableHere, id.range,
             fmt::format("`{}` is typed by the kernel's BTF, and this BTF lacks its type", name))
          .note(fmt::format("`{}` is {}", name, builtins[i].doc));
      return info;
    }
    if (!builtins[i].recipe.task_path.empty() && !findTaskMembers(builtins[i], id, info)) {
      info.type = error();
      return info;
    }
    checkNeeds(builtins[i], id);
    // A glob's `probe`: the call's number, or the match's position, named by the glob's table.
    if (builtins[i].id == BuiltinVar::Probe && scope_.target && scope_.target->probeNames()) {
      info.table = scope_.target->probeNames();
    }
    return info;
  }
  if (auto it = ctx_.decls.lets.find(name); it != ctx_.decls.lets.end()) {
    checkLet(ctx_, *it->second);  // on its first use, when declared after it
    info = ctx_.decls.let_info.at(it->second);
    info.ref = Ref::Let;
    info.let = it->second;
    if (!info.type) info.type = error();  // its own error was reported
    return info;
  }
  // Properties before enumerators: finding an enumerator indexes every enum of the kernel.
  if (auto property = this->property(id)) return *property;
  if (auto e = ctx_.btf.findEnumerator(name)) {
    info.ref = Ref::Enumerator;
    info.value = e->value;
    info.type = ctx_.types.fromBtf(e->enum_type);
    info.constant = true;
    return info;
  }
  unknownName(id);
  info.type = error();
  return info;
}

bool ExprChecker::findTaskMembers(const BuiltinVariable& builtin, const ast::Identifier& id,
                                  ExprInfo& info) {
  const std::vector<std::string>& names = builtin.recipe.task_path;
  std::string spelled = "task_struct";
  std::optional<btf::BtfType> task = ctx_.btf.findStruct("task_struct");
  btf::BtfType type = task ? task->resolved() : btf::BtfType{};
  std::string lacks = task ? "" : "has no `struct task_struct`";
  for (size_t i = 0; i < names.size() && lacks.empty(); ++i) {
    btf::BtfType record = type;
    if (btf_is_ptr(type.get())) record = btf::BtfType{type.file, type.get()->type}.resolved();
    spelled += (btf_is_ptr(type.get()) ? "->" : ".") + names[i];
    std::optional<btf::MemberSteps> member = btf::findMemberSteps(record, names[i]);
    if (!member) {
      lacks = fmt::format("has no member `{}` in `{}`", names[i], ctx_.types.fromBtf(record)->spelling);
      break;
    }
    type = member->type;
    info.task_members.push_back(std::move(*member));
  }
  if (lacks.empty() && (!btf_is_int(type.get()) || type.size() == 0 || type.size() > 8)) {
    lacks = fmt::format("makes `{}` a `{}`, not an integer", spelled, ctx_.types.fromBtf(type)->spelling);
  }
  if (lacks.empty()) return true;
  info.task_members.clear();
  report(DiagKind::NotAvailableHere, id.range,
         fmt::format("`{}` reads `{}` of the current task, and this kernel's BTF {}", builtin.name,
                     spelled, lacks))
      .note(fmt::format("`{}` is {}", builtin.name, builtin.doc));
  return false;
}

std::optional<uint32_t> ExprChecker::argNumber(const std::string& name) {
  if (name.size() < 4 || name.compare(0, 3, "arg") != 0) return std::nullopt;
  for (size_t i = 3; i < name.size(); ++i) {
    if (!isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  }
  if (name.size() > 5) return std::nullopt;
  return static_cast<uint32_t>(std::stoul(name.substr(3)));
}

bool ExprChecker::needsExit(std::string_view name, const ast::Expr& at) {
  if (!scope_.target) return true;
  if (scope_.in_entry) {
    report(DiagKind::NotAvailableHere, at.range,
           fmt::format("`{}` has no value yet when the function is entered", name))
        .note("`entry(x)` evaluates `x` at entry; use it outside `entry`");
    return false;
  }
  if (scope_.target->return_type == nullptr) {
    report(DiagKind::NotAvailableHere, at.range,
           fmt::format("`{}` needs a probe with an exit, and {} has none", name,
                       scope_.target->description))
        .note("functions, syscalls and uprobes have exits; tracepoints do not");
    return false;
  }
  if (scope_.target->events.size() > 1 && !scope_.target->syscall_names) {
    // A glob of tracepoints has no exits; one of syscalls that kq cannot number (none on
    // x86-64) would need a pair of programs for each call.
    report(DiagKind::NotAvailableHere, at.range,
           fmt::format("`{}` needs each call's exit, and {} traces entries only", name,
                       scope_.target->description))
        .note("name one syscall (`trace syscall:read select return`), or read every exit with "
              "`trace tracepoint:raw_syscalls:sys_exit select id, ret`");
    return false;
  }
  if (scope_.at_exit) *scope_.at_exit = true;
  return true;
}

void ExprChecker::checkNeeds(const BuiltinVariable& builtin, const ast::Expr& at) {
  if (!scope_.target) return;
  if (builtin.needs == Needs::Exit && !needsExit(builtin.name, at)) return;
  bool traces_functions = scope_.target->target &&
                          (std::holds_alternative<ast::FunctionTarget>(scope_.target->target->kind) ||
                           std::holds_alternative<ast::UprobeTarget>(scope_.target->target->kind) ||
                           std::holds_alternative<ast::PacketTarget>(scope_.target->target->kind) ||
                           std::holds_alternative<ast::BpfProgramTarget>(scope_.target->target->kind));
  if (builtin.id == BuiltinVar::Func && scope_.func) {
    scope_.func->anywhere = true;
    scope_.func->in_where = scope_.func->in_where || scope_.in_where;
  }
  if (scope_.in_where && (builtin.id == BuiltinVar::Kstack || builtin.id == BuiltinVar::Ustack ||
                          builtin.id == BuiltinVar::Caller)) {
    // Found among a stack's frames when the event prints: the kernel has no text to compare.
    report(DiagKind::NotAvailableHere, at.range,
           fmt::format("`{}` is known when the event prints, so `where` cannot compare it", builtin.name))
        .note(fmt::format("count by it instead: `group by {} select count()`", builtin.name));
    return;
  }
  if (builtin.id == BuiltinVar::Caller && scope_.target->target &&
      !(std::holds_alternative<ast::FunctionTarget>(scope_.target->target->kind) ||
        std::holds_alternative<ast::TracepointTarget>(scope_.target->target->kind) ||
        std::holds_alternative<ast::SyscallTarget>(scope_.target->target->kind) ||
        std::holds_alternative<ast::PacketTarget>(scope_.target->target->kind) ||
        std::holds_alternative<ast::BpfProgramTarget>(scope_.target->target->kind))) {
    report(DiagKind::NotAvailableHere, at.range,
           fmt::format("`caller` is the kernel function that called the traced one, and {} is not "
                       "in the kernel's code", scope_.target->description))
        .note("kernel functions, tracepoints, syscalls and packets have callers; `ustack` shows a "
              "user stack");
    return;
  }
  if (builtin.needs == Needs::Function && !traces_functions) {
    report(DiagKind::NotAvailableHere, at.range,
           fmt::format("`{}` names a traced function, and {} traces none", builtin.name,
                       scope_.target->description));
  }
}

ExprInfo ExprChecker::returnValue(const ast::Expr& e) {
  ExprInfo info;
  info.ref = Ref::Return;
  if (!scope_.target) {
    report(DiagKind::NotAvailableHere, e.range, "`return` is only meaningful inside a probe");
    info.type = error();
    return info;
  }
  if (scope_.in_entry) {
    needsExit("return", e);
    info.type = error();
    return info;
  }
  if (!scope_.target->return_type) {
    Diagnostic& d = report(DiagKind::NotAvailableHere, e.range,
                           fmt::format("{} has no return value", scope_.target->description));
    // A system call's exit tracepoint records its return as the field `ret`.
    bool has_ret = std::any_of(scope_.target->args.begin(), scope_.target->args.end(),
                               [](const ProbeArg& a) { return a.name == "ret"; }) ||
                   std::any_of(scope_.target->record_fields.begin(), scope_.target->record_fields.end(),
                               [](const ProbeArg& a) { return a.name == "ret"; });
    if (has_ret) {
      d.note("its record's field `ret` is the call's return value; or trace `syscall:NAME` and "
             "select `return`");
    } else {
      d.note("functions, syscalls and uprobes return values; tracepoints do not");
    }
    info.type = error();
    return info;
  }
  if (!needsExit("return", e)) {
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

std::optional<ExprInfo> ExprChecker::property(const ast::Identifier& id) {
  if (!scope_.target) return std::nullopt;
  ctx_.loadProperties(id.name);
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

void ExprChecker::unknownName(const ast::Identifier& id) {
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
  if (id.name == "args" && bpftraceArgs(diag)) return;
  // bpftrace's names for what kq names otherwise.
  static const std::map<std::string_view, std::string_view> bpftrace = {
      {"nsecs", "kq's `time` (nanoseconds since boot)"},
      {"curtask", "kq's `task` (the current thread's `struct task_struct *`)"},
      {"cpid", "kq's `pid` of the events of -c's command: with -c, kq traces only it and its children"},
      {"username", "kq's `uid` (kq does not look the name up)"},
  };
  if (auto it = bpftrace.find(id.name); it != bpftrace.end()) {
    diag.note(fmt::format("bpftrace's `{}` is {}", it->first, it->second));
    return;
  }
  // An argument of a function probed at an offset into it.
  if (scope_.target && scope_.target->kprobe_offset && !scope_.target->functions.empty()) {
    for (const btf::FunctionParam& param : scope_.target->functions.front().params) {
      if (param.name != id.name) continue;
      diag.note(fmt::format("`{}` is an argument of `{}`, read at its entry only: at an offset into "
                            "it, the register that held it may hold anything",
                            id.name, scope_.target->functions.front().name));
      return;
    }
  }
  // An argument of a tracepoint's handler, where the query reads its classic record.
  if (scope_.target && !scope_.target->record_because.empty()) {
    const ResolvedTarget& t = *scope_.target;
    for (const std::string& arg : t.handler_args) {
      if (arg != id.name) continue;
      diag.note(fmt::format("`{}` is an argument of the tracepoint's BTF handler (tp_btf); this "
                            "query reads `{}`, a field of its classic record, so the probe "
                            "attaches as a classic tracepoint, whose record has no `{}`",
                            id.name, t.record_because, id.name));
      std::string fields;
      for (const ProbeArg& f : t.args) fields += fmt::format("{}`{}`", fields.empty() ? "" : ", ", f.name);
      diag.note(fmt::format("the record has {}; read `{}` in a query of its own", fields, id.name));
      return;
    }
  }
  // A constant of a module the script does not `use` (`signals` of `names`).
  for (const auto& module : ctx_.modules) {
    for (const ast::Item& item : module->items) {
      const auto* let = std::get_if<ast::LetDecl>(&item);
      if (!let || let->name != id.name) continue;
      const std::string& file = ctx_.sources.file(module->file).name();
      std::string name = file.substr(7, file.size() - 10);  // stdlib/<name>.kq
      diag.note(fmt::format("`{}` is in the stdlib module `{}`: add `use {}`", id.name, name, name));
      return;
    }
  }
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

ExprInfo ExprChecker::call(const ast::Call& c) {
  ExprInfo info;
  const auto& functions = builtinFunctions();
  for (uint32_t i = 0; i < functions.size(); ++i) {
    const BuiltinFunction& f = functions[i];
    if (f.name != c.callee) continue;
    info.ref = Ref::BuiltinFunction;
    info.index = i;
    info.function = &f;
    if (f.aggregate && !scope_.aggregates_allowed) {
      report(DiagKind::AggregateMisuse, c.range,
             fmt::format("`{}` is an aggregate; it can only be a `select` item", f.signature))
          .note("for example: trace ... select comm, count() group by comm");
      info.type = error();
      return info;
    }
    if (f.needs == Needs::Exit && !needsExit(f.signature, c)) {
      info.type = error();
      return info;
    }
    bool inner_allowed = scope_.aggregates_allowed;
    bool inner_entry = scope_.in_entry;
    scope_.aggregates_allowed = false;  // no aggregates inside aggregates
    scope_.in_entry = inner_entry || f.id == BuiltinFn::Entry;
    BuiltinCall bc{c, {}, ctx_.types, ctx_.diags, ctx_.kernel, ctx_.btf};
    bc.target = scope_.target;
    bc.sources = &ctx_.sources;
    for (const ast::ExprPtr& arg : c.args) bc.args.push_back(check(*arg));
    scope_.aggregates_allowed = inner_allowed;
    scope_.in_entry = inner_entry;
    if (c.args.size() < f.min_args || c.args.size() > f.max_args) {
      report(DiagKind::WrongArgumentCount, c.range,
             fmt::format("`{}` takes {}, not {}", f.signature, countText(f.min_args, f.max_args),
                         c.args.size()));
      info.type = error();
      return info;
    }
    info.type = f.check(bc);
    info.operands = std::move(bc.operands);
    info.table = std::move(bc.table);
    info.packet_filter = std::move(bc.packet_filter);
    info.constant = info.type->kind == TypeKind::Table;  // built when the query is checked
    return info;
  }
  const ast::FnDecl* fn = nullptr;
  if (scope_.module) {
    // Inside a stdlib function: its own module's functions first.
    const auto& own = ctx_.module_fns[scope_.module];
    if (auto it = own.find(c.callee); it != own.end()) fn = it->second;
  }
  if (auto it = ctx_.decls.fns.find(c.callee); !fn && it != ctx_.decls.fns.end()) fn = it->second;
  if (auto it = ctx_.c_functions.find(c.callee); !fn && it != ctx_.c_functions.end()) {
    return cCall(c, it->second);
  }
  if (!fn) {
    unknownCall(c);
    for (const ast::ExprPtr& arg : c.args) check(*arg);
    info.type = error();
    return info;
  }
  std::vector<const Type*> arg_types;
  for (const ast::ExprPtr& arg : c.args) arg_types.push_back(check(*arg));
  if (c.args.size() != fn->params.size()) {
    report(DiagKind::WrongArgumentCount, c.range,
           fmt::format("`{}` takes {} argument{}, not {}", c.callee, fn->params.size(),
                       fn->params.size() == 1 ? "" : "s", c.args.size()))
        .note(fn->name_range, "declared here");
    info.type = error();
    return info;
  }
  for (size_t i = 0; i < arg_types.size(); ++i) {
    const Type* wanted = paramType(*fn, i);
    if (wanted && !arg_types[i]->isError() && !wanted->isError() &&
        !assignable(arg_types[i], wanted)) {
      report(DiagKind::TypeMismatch, c.args[i]->range,
             fmt::format("`{}` takes `{}` as `{}`, not `{}`", c.callee, wanted->spelling,
                         fn->params[i].name, arg_types[i]->spelling));
      info.type = error();
      return info;
    }
  }
  info = expandFn(*fn, c, arg_types);
  info.ref = Ref::Fn;
  return info;
}

std::string ExprChecker::countText(size_t lo, size_t hi) {
  auto args = [](size_t n) { return fmt::format("{} argument{}", n, n == 1 ? "" : "s"); };
  if (lo == hi) return lo == 0 ? "no arguments" : args(lo);
  if (hi >= 16) return fmt::format("at least {}", args(lo));
  return fmt::format("{} to {} arguments", lo, hi);
}

void ExprChecker::unknownCall(const ast::Call& c) {
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

bool ExprChecker::bpftraceArgs(Diagnostic& diag) {
  std::string names;
  int shown = 0;
  for (const ProbeArg& arg : args()) {
    if (arg.name.empty() || arg.name == "args") continue;
    if (++shown <= 4) names += fmt::format("{}`{}`", names.empty() ? "" : ", ", arg.name);
  }
  if (names.empty()) return false;
  if (shown > 4) names += ", ...";
  diag.note(fmt::format("kq names {}'s arguments and fields by themselves: bpftrace's `args.NAME` "
                        "is `NAME` here ({})",
                        scope_.target->description, names));
  return true;
}

const Type* ExprChecker::paramType(const ast::FnDecl& fn, size_t i) {
  if (!fn.params[i].type) return nullptr;
  return resolveTypeName(ctx_, *fn.params[i].type);
}

void ExprChecker::warnIfShadowing(const ast::Identifier& id, const ProbeArg& arg) {
  const auto& builtins = builtinVariables();
  bool shadows = std::any_of(builtins.begin(), builtins.end(),
                             [&](const BuiltinVariable& b) { return b.name == arg.name; });
  if (!shadows || !shadowing_said_.emplace(scope_.target, arg.name).second) return;
  // An iterator runs in kq itself: its `task` is the one iterated, the builtin kq's own.
  if (scope_.target->target && std::holds_alternative<ast::IterTarget>(scope_.target->target->kind)) return;
  bool field = scope_.target->functions.empty() && scope_.target->format;
  const char* what = field ? "field" : "argument";
  report(DiagKind::ShadowedBuiltin, id.range,
         fmt::format("`{}` is the {} `{}` of `{}`, not the builtin `{}`", arg.name, what,
                     arg.name, scope_.target->description, arg.name))
      .note(fmt::format("write `arg{}` for the {}; the builtin is shadowed in this probe, but a "
                        "function's body sees it: `fn current_{}() = {}`",
                        arg.index, what, arg.name, arg.name));
}

bool ExprChecker::mayExpand(const ast::FnDecl& fn, const ast::Expr& use) {
  for (const ast::FnDecl* active : scope_.calls) {
    if (active != &fn) continue;
    report(DiagKind::RecursiveFunction, use.range,
           fmt::format("`{}` calls itself; kq functions are expanded inline and cannot recurse",
                       fn.name))
        .note(fn.name_range, "declared here");
    return false;
  }
  if (scope_.calls.size() >= kMaxFnDepth) {
    report(DiagKind::FunctionExpansionTooLarge, use.range,
           fmt::format("calling `{}` here nests {} functions, more than {}; kq functions are "
                       "expanded inline", fn.name, scope_.calls.size() + 1, kMaxFnDepth));
    return false;
  }
  if (++ctx_.fn_expansions == kMaxFnExpansions + 1) {
    report(DiagKind::FunctionExpansionTooLarge, use.range,
           fmt::format("functions are expanded inline more than {} times in this program, here "
                       "`{}`", kMaxFnExpansions, fn.name))
        .note("each call expands its function's body again: a function that calls another "
              "several times multiplies the expansions");
  }
  return ctx_.fn_expansions <= kMaxFnExpansions;
}

ExprInfo ExprChecker::expandFn(const ast::FnDecl& fn, const ast::Expr& use,
                              std::vector<const Type*> arg_types) {
  ExprInfo info;
  info.fn = &fn;
  if (!mayExpand(fn, use)) {
    info.type = error();
    return info;
  }
  // The body keeps the probe's context (exit, `where`, `entry`), with its own parameters.
  Scope inner = scope_;
  inner.params.clear();
  inner.aggregates_allowed = false;
  inner.joins = nullptr;  // a body cannot name a query's joins
  inner.join_name = {};
  inner.calls.push_back(&fn);
  auto home = ctx_.fn_home.find(&fn);
  inner.module = home == ctx_.fn_home.end() ? nullptr : home->second;
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
  // A function that looks a name up (`fn signame(s) = signals[s]`) prints like the lookup.
  const ExprInfo& result = info.body->at(fn.body.get());
  if (result.type->kind == TypeKind::String) info.table = result.table;
  return info;
}

}  // namespace kq::sema
