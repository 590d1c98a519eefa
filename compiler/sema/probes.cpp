// Probe targets against the kernel: which functions, tracepoints, syscalls or symbols a
// target names, what arguments it brings into scope, and how it can be attached.
#include <bpf/btf.h>
#include "host/btf_file.h"
#include <fmt/format.h>

#include <map>
#include <algorithm>
#include <mutex>

#include "host/binary_path.h"
#include "host/elf_symbols.h"
#include "host/usdt.h"
#include "compiler/sema/builtins/builtins.h"
#include "host/syscall_numbers.h"
#include "compiler/sema/context.h"
#include "compiler/sema/record_formats.h"

namespace kq::sema {

namespace {

using host::Known;

void addDidYouMean(Diagnostic& diag, std::string_view name,
                   const std::vector<std::string_view>& candidates) {
  if (auto close = closestName(name, candidates)) diag.note(fmt::format("did you mean `{}`?", *close));
}

std::vector<std::string_view> views(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

/// Arguments shared by every function: same position, same name, same type spelling.
std::vector<ProbeArg> sharedArgs(Context& ctx, const std::vector<btf::Function>& functions) {
  std::vector<ProbeArg> out;
  const btf::Function& first = functions.front();
  for (uint32_t i = 0; i < first.params.size(); ++i) {
    const Type* type = ctx.types.fromBtf(first.params[i].type);
    bool shared = true;
    for (const btf::Function& f : functions) {
      shared = shared && i < f.params.size() && f.params[i].name == first.params[i].name &&
               ctx.types.fromBtf(f.params[i].type)->spelling == type->spelling;
    }
    out.push_back({shared ? first.params[i].name : "", shared ? type : ctx.types.u64(), i});
  }
  return out;
}

}  // namespace

std::vector<AttachMethod> functionAttachMethods(host::KernelInfo& kernel,
                                                const std::vector<btf::Function>& fns) {
  Known listed = Known::Yes;
  std::string missing;
  for (const btf::Function& f : fns) {
    Known k = kernel.inFilterFunctions(f.name);
    if (k == Known::No) {
      listed = Known::No;
      missing = f.name;
      break;
    }
    if (k == Known::Unknown) listed = Known::Unknown;
  }
  std::string listed_why;
  if (listed == Known::No) {
    listed_why = fmt::format("`{}` is not in available_filter_functions (inlined or notrace)", missing);
  } else if (listed == Known::Unknown) {
    listed_why = kernel.filterFunctionsProblem();
  }
  Known kprobes = kernel.hasKprobes();
  Known kprobe_ok = kprobes == Known::No ? Known::No : listed;
  std::string kprobe_why = kprobes == Known::No
                               ? "this kernel has no kprobe support (no `kprobe` perf event source)"
                               : listed_why;
  return {{AttachKind::Fentry, listed, listed_why}, {AttachKind::Kprobe, kprobe_ok, kprobe_why}};
}

/// `event` -> `category:event`, for the events of the categories tracefs lists.
std::map<std::string, std::string> tracepointNames(Context& ctx, const std::set<std::string>& events) {
  return tracepointNames(ctx.kernel, events);
}

std::map<std::string, std::string> tracepointNames(host::KernelInfo& kernel, const std::set<std::string>& events) {
  std::map<std::string, std::string> out;
  auto categories = kernel.tracepointCategories();
  if (!categories) return out;
  for (const std::string& category : *categories) {
    auto listed = kernel.tracepointEvents(category);
    if (!listed) continue;
    for (const std::string& event : *listed) {
      if (events.count(event)) out.emplace(event, category + ":" + event);
    }
  }
  return out;
}

/// Kernel functions renamed (or folded into another) by later kernels: asked for by the old
/// name where it is gone, the new one is suggested.
constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
    {"kfree_skb_reason", "sk_skb_reason_drop"},  // 6.10
    {"sk_skb_reason_drop", "kfree_skb_reason"},  // before 6.10
    {"__kfree_skb_reason", "sk_skb_reason_drop"},
};

std::vector<std::string> standInNotes(const btf::Btf& btf, host::KernelInfo& kernel, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& [old_name, new_name] : kRenamed) {
    if (name == old_name && btf.findFunction(new_name) &&
        kernel.inFilterFunctions(std::string(new_name)) != host::Known::No) {
      out.push_back(fmt::format("this kernel has `{}` in its place", new_name));
    }
  }
  std::set<std::string> events{name};
  constexpr std::string_view kReason = "_reason";
  if (name.size() > kReason.size() && name.compare(name.size() - kReason.size(), kReason.size(), kReason) == 0) {
    events.insert(name.substr(0, name.size() - kReason.size()));
  }
  for (auto it = events.begin(); it != events.end();) {
    it = btf.findTracepointHandler(*it) ? std::next(it) : events.erase(it);
  }
  for (const auto& [event, full] : tracepointNames(kernel, events)) {
    out.push_back(fmt::format("the tracepoint `tracepoint:{}` is there on every kernel", full));
  }
  return out;
}

namespace {

/// Where a function kq cannot trace here has a stand-in: its name in other kernels, or a
/// tracepoint of the same name (`kfree_skb_reason` -> tracepoint:skb:kfree_skb).
void addStandIns(Context& ctx, Diagnostic& diag, const std::string& name) {
  for (const std::string& note : standInNotes(ctx.btf, ctx.kernel, name)) diag.note(note);
}

/// Functions one probe may attach to: each is a program (or an attachment) of its own, and
/// compiling tens of thousands takes minutes and gigabytes. `tcp_*` matches about 400.
constexpr size_t kMaxGlobFunctions = 5000;

/// The traceable functions a glob names, or nothing after reporting that there are too many.
std::optional<std::vector<btf::Function>> globFunctions(Context& ctx, const ast::FunctionTarget& t) {
  std::vector<std::string_view> names;
  for (std::string_view name : ctx.btf.matchFunctionNames(t.function.text)) {
    // Without a module, a glob means the functions that can be traced: those ftrace lists
    // (not inlined away, not notrace), when the kernel says which.
    if (t.module) {
      std::optional<btf::Function> f = ctx.btf.findFunction(name);
      if (!f || !btf::globMatch(t.module->text, f->module.empty() ? "vmlinux" : f->module)) continue;
    } else if (ctx.kernel.inFilterFunctions(std::string(name)) == Known::No) {
      continue;
    }
    names.push_back(name);
  }
  if (names.size() > kMaxGlobFunctions) {
    std::string what = t.module ? t.module->text + ":" + t.function.text : t.function.text;
    ctx.diags.report(DiagKind::TooManyFunctions, t.function.range,
                     fmt::format("`{}` matches {} functions; kq attaches one probe to at most {}",
                                 what, names.size(), kMaxGlobFunctions))
        .note("narrow the glob (`tcp_*`, `vfs_*`) or name a module (`trace ext4:*`), or split "
              "it into several probes");
    return std::nullopt;
  }
  std::vector<btf::Function> out;
  for (std::string_view name : names) out.push_back(*ctx.btf.findFunction(name));
  return out;
}

/// `vfs_read+0x10`: one function, by a kprobe inside it; its arguments are not in scope
/// (the registers that held them may hold anything there), nor is its return.
std::optional<ResolvedTarget> atOffset(Context& ctx, const ast::FunctionTarget& t, ResolvedTarget out) {
  if (out.functions.size() != 1 || t.function.isGlob()) {
    ctx.diags.report(DiagKind::Unsupported, t.offset_range,
                     "an offset is into one function: name it, not a glob");
    return std::nullopt;
  }
  if (t.captures) {
    for (const ast::Capture& c : t.captures->items) {
      if (c.expr && c.expr->kind == ast::ExprKind::ReturnValue) {
        ctx.diags.report(DiagKind::Unsupported, c.expr->range,
                         "a probe at an offset into a function is not at its return");
        return std::nullopt;
      }
    }
  }
  std::vector<AttachMethod> methods = functionAttachMethods(ctx.kernel, out.functions);
  out.attach = {methods.back()};  // the kprobe: a trampoline is only at a function's entry
  out.kprobe_offset = *t.offset;
  out.description = fmt::format("{}+0x{:x}", out.functions.front().name, *t.offset);
  return out;
}

std::optional<ResolvedTarget> resolveFunction(Context& ctx, const ast::Target& target,
                                              const ast::FunctionTarget& t) {
  ResolvedTarget out;
  const std::string& name = t.function.text;
  if (t.module || t.function.isGlob()) {
    auto matched = globFunctions(ctx, t);
    if (!matched) return std::nullopt;
    out.functions = std::move(*matched);
  } else if (auto f = ctx.btf.findFunction(name)) {
    if (ctx.kernel.inFilterFunctions(name) == Known::No) {
      // In BTF, but inlined into its callers or marked notrace: nothing can attach to it.
      Diagnostic& diag = ctx.diags.report(
          DiagKind::NotTraceable, t.function.range,
          fmt::format("`{}` cannot be traced on this kernel: it is not in ftrace's "
                      "available_filter_functions (inlined into its callers, or notrace)", name));
      addStandIns(ctx, diag, name);
      return std::nullopt;
    }
    out.functions.push_back(std::move(*f));
  }
  if (out.functions.empty()) {
    std::string what = t.module ? t.module->text + ":" + name : name;
    Diagnostic& diag = ctx.diags.report(DiagKind::UnknownFunction, t.function.range,
                                        fmt::format("no kernel function matches `{}`", what));
    if (!t.function.isGlob()) {
      addStandIns(ctx, diag, name);
      if (diag.notes.empty()) addDidYouMean(diag, name, ctx.btf.functionNames());
    }
    if (t.module) diag.note("module functions are searched in /sys/kernel/btf/<module>");
    return std::nullopt;
  }
  if (t.offset) return atOffset(ctx, t, std::move(out));
  out.args = sharedArgs(ctx, out.functions);
  out.return_type = ctx.types.fromBtf(out.functions.front().return_type);
  out.attach = functionAttachMethods(ctx.kernel, out.functions);
  // A glob that matches one function is named by it, as a probe of that function is.
  out.description = out.functions.size() == 1
                        ? out.functions.front().name
                        : fmt::format("{} ({} functions)", name, out.functions.size());
  (void)target;
  return out;
}

/// `probe` of a glob over classic tracepoints: each match's name, by its position.
std::shared_ptr<const LookupTable> eventNames(const std::vector<std::string>& events, bool as_syscalls,
                                              const std::string& origin) {
  auto names = std::make_shared<LookupTable>();
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string& e = events[i];
    std::string name = "tracepoint:" + e;
    if (as_syscalls) {
      for (std::string_view prefix : {"syscalls:sys_enter_", "syscalls:sys_exit_"}) {
        if (e.rfind(prefix, 0) == 0) name = "syscall:" + e.substr(prefix.size());
      }
    }
    names->names.emplace(static_cast<int64_t>(i), std::move(name));
  }
  names->origin = origin;
  return names;
}

/// The record fields that each of `events` (`category:event`) has at the same place, with
/// the same type: a glob's queries read them as a single tracepoint's (`ret` of
/// `syscalls:sys_exit_*`, `dev` and `sector` of `block:block_rq_*`). A system call's
/// number (`__syscall_nr`) is the call's own, not a field of its queries; and a field named
/// like a builtin (`comm`, `pid`) leaves the builtin what it is in every other glob.
host::TracepointFormat commonFields(Context& ctx, const std::vector<std::string>& events) {
  const auto& builtins = builtinVariables();
  auto builtin = [&](const std::string& name) {
    return std::any_of(builtins.begin(), builtins.end(), [&](const BuiltinVariable& b) { return b.name == name; });
  };
  host::TracepointFormat common;
  bool first = true;
  for (const std::string& e : events) {
    size_t colon = e.find(':');
    auto format = ctx.kernel.tracepointFormat(e.substr(0, colon), e.substr(colon + 1));
    if (!format) return {};
    if (first) {
      for (const host::TracepointField& f : format->fields) {
        if (f.name != "__syscall_nr" && !builtin(f.name)) common.fields.push_back(f);
      }
      first = false;
      continue;
    }
    auto same = [&](const host::TracepointField& f) {
      return std::any_of(format->fields.begin(), format->fields.end(), [&](const host::TracepointField& g) {
        return g.name == f.name && g.type == f.type && g.offset == f.offset && g.size == f.size &&
               g.is_signed == f.is_signed;
      });
    };
    common.fields.erase(std::remove_if(common.fields.begin(), common.fields.end(),
                                       [&](const host::TracepointField& f) { return !same(f); }),
                        common.fields.end());
    if (common.fields.empty()) break;
  }
  return common;
}

/// A glob's matches (`category:event`) when every one is a syscall's entry that kq has a
/// number for: each entry's name (`tracepoint:syscalls:sys_enter_openat`, with `prefix`), by
/// number, so that one raw_syscalls program serves them all (`probe` looks the number up).
std::shared_ptr<const LookupTable> syscallEntryNames(const std::vector<std::string>& events,
                                                     bool as_syscalls, const std::string& origin) {
  auto names = std::make_shared<LookupTable>();
  for (const std::string& e : events) {
    constexpr std::string_view kEntry = "syscalls:sys_enter_";
    if (e.rfind(kEntry, 0) != 0) return nullptr;
    std::optional<uint32_t> nr = host::syscallNumber(std::string_view(e).substr(kEntry.size()));
    // A call without a number (or two with one): a tracepoint each.
    std::string name = as_syscalls ? "syscall:" + e.substr(kEntry.size()) : "tracepoint:" + e;
    if (!nr || !names->names.emplace(*nr, std::move(name)).second) return nullptr;
  }
  names->origin = origin;
  return names;
}

/// `rawtracepoint:EVENT`: the event's BTF handler, through tp_btf, typed as a tracepoint's.
std::optional<ResolvedTarget> resolveRawTracepoint(Context& ctx, const ast::TracepointTarget& t) {
  ResolvedTarget out;
  out.event = t.event.text;
  out.description = "rawtracepoint:" + out.event;
  if (t.event.isGlob()) {
    ctx.diags.report(DiagKind::Unsupported, t.event.range, "a raw tracepoint is named whole, not by a glob")
        .note(fmt::format("`tracepoint:*:{}` takes a glob over the tracefs events", t.event.text));
    return std::nullopt;
  }
  auto handler = ctx.btf.findTracepointHandler(out.event);
  if (!handler) {
    Diagnostic& diag = ctx.diags.report(DiagKind::UnknownTracepoint, t.event.range,
                                        fmt::format("the kernel's BTF has no tracepoint `{}`", out.event));
    std::vector<std::string> names = ctx.btf.tracepointNames();
    addDidYouMean(diag, out.event, views(names));
    diag.note(names.empty() ? "this BTF has no tracepoint at all (no `btf_trace_*` typedefs)"
                            : "kq list 'rawtracepoint:*' shows them");
    return std::nullopt;
  }
  for (uint32_t i = 1; i < handler->params.size(); ++i) {
    out.args.push_back({handler->params[i].name, ctx.types.fromBtf(handler->params[i].type), i - 1});
  }
  out.functions.push_back(std::move(*handler));
  out.attach.push_back({AttachKind::TpBtf, Known::Yes, ""});
  return out;
}

std::optional<ResolvedTarget> resolveTracepoint(Context& ctx, const ast::TracepointTarget& t) {
  if (t.raw) return resolveRawTracepoint(ctx, t);
  ResolvedTarget out;
  out.category = t.category.text;
  out.event = t.event.text;
  out.description = fmt::format("tracepoint:{}:{}", out.category, out.event);

  auto categories = ctx.kernel.tracepointCategories();
  if (!categories) {
    // No tracefs (or checking against a BTF file): BTF still knows the event's handler and
    // its record (trace_event_raw_*); kq's table, a system call's record.
    std::optional<host::TracepointFormat> record;
    if (!t.event.isGlob()) {
      record = out.category == "syscalls" ? syscallRecordFormat(out.event) : recordFormatFromBtf(ctx.btf, out.event);
    }
    if (record && out.category == "syscalls") {
      out.format = std::move(record);
    } else if (!t.event.isGlob() && (ctx.btf.findTracepointHandler(out.event) || record)) {
      ctx.diags.report(DiagKind::UncheckedProbe, t.category.range,
                       fmt::format("cannot check that `{}` is in category `{}`: {}", out.event,
                                   out.category, categories.error().message));
      out.format = std::move(record);
    } else {
      ctx.diags.report(DiagKind::UnknownTracepoint, t.event.range,
                       fmt::format("cannot find tracepoint `{}:{}`", out.category, out.event))
          .note(categories.error().message);
      return std::nullopt;
    }
  } else {
    std::vector<std::string> matched_categories;
    for (const std::string& c : *categories) {
      if (btf::globMatch(out.category, c)) matched_categories.push_back(c);
    }
    if (matched_categories.empty()) {
      Diagnostic& diag =
          ctx.diags.report(DiagKind::UnknownTracepoint, t.category.range,
                           fmt::format("no tracepoint category `{}`", out.category));
      addDidYouMean(diag, out.category, views(*categories));
      return std::nullopt;
    }
    std::vector<std::string> events;
    std::vector<std::string> all_events;
    for (const std::string& c : matched_categories) {
      auto listed = ctx.kernel.tracepointEvents(c);
      if (!listed) continue;
      for (const std::string& e : *listed) {
        all_events.push_back(e);
        if (btf::globMatch(out.event, e)) {
          events.push_back(e);
          out.events.push_back(c + ":" + e);
        }
      }
    }
    if (events.empty()) {
      Diagnostic& diag = ctx.diags.report(
          DiagKind::UnknownTracepoint, t.event.range,
          fmt::format("no tracepoint `{}` in category `{}`", out.event, out.category));
      addDidYouMean(diag, out.event, views(all_events));
      return std::nullopt;
    }
    if (events.size() > 1) {
      out.description += fmt::format(" ({} tracepoints)", events.size());
      out.category.clear();
      out.attach = {{AttachKind::Tracepoint, Known::Yes, ""}};
      out.syscall_names = syscallEntryNames(out.events, false, out.description);
      // A glob over events: the builtins, and the fields every event's record has alike
      // (`ret` of `syscalls:sys_exit_*`), unless one program serves every call.
      if (!out.syscall_names) {
        out.event_names = eventNames(out.events, false, out.description);
        out.format = commonFields(ctx, out.events);
        uint32_t i = 0;
        for (const host::TracepointField& field : out.format->fields) {
          out.args.push_back({field.name, typeFromCString(ctx, field.type, field.size, field.is_signed), i++});
        }
        if (out.args.empty()) out.format.reset();
      }
      return out;
    }
    out.event = events.front();
    out.category = out.events.front().substr(0, out.events.front().find(':'));
    out.events.clear();
    // A glob that matches one event is named by it (`probe`, the PROBE column).
    out.description = fmt::format("tracepoint:{}:{}", out.category, out.event);
    if (matched_categories.size() == 1) {
      auto format = ctx.kernel.tracepointFormat(matched_categories.front(), out.event);
      if (format) out.format = std::move(*format);
    }
  }

  std::vector<ProbeArg> fields;
  if (out.format) {
    uint32_t i = 0;
    for (const host::TracepointField& field : out.format->fields) {
      if (out.category == "syscalls" && field.name == "__syscall_nr") continue;
      fields.push_back({field.name, typeFromCString(ctx, field.type, field.size, field.is_signed), i++});
    }
  }
  // tp_btf gives typed arguments (`struct sk_buff *skb`); the classic record gives fields.
  if (auto handler = ctx.btf.findTracepointHandler(out.event)) {
    for (uint32_t i = 1; i < handler->params.size(); ++i) {
      out.args.push_back(
          {handler->params[i].name, ctx.types.fromBtf(handler->params[i].type), i - 1});
    }
    out.functions.push_back(std::move(*handler));
    // Only tp_btf: the expressions are typed against its arguments, which the classic
    // record does not have. A query that names a field only the record has is typed by
    // the record instead (typeByRecord).
    out.attach.push_back({AttachKind::TpBtf, Known::Yes, ""});
    out.record_fields = std::move(fields);
    return out;
  }
  out.args = std::move(fields);
  out.attach.push_back({AttachKind::Tracepoint, out.format ? Known::Yes : Known::Unknown, ""});
  return out;
}


std::optional<ResolvedTarget> resolveSyscall(Context& ctx, const ast::SyscallTarget& t) {
  ResolvedTarget out;
  out.category = "syscalls";
  out.description = "syscall:" + t.syscall.text;
  out.return_type = ctx.types.s64();
  out.attach = {{AttachKind::Tracepoint, Known::Yes, ""}};

  auto events = ctx.kernel.tracepointEvents("syscalls");
  if (!events) {
    // Without tracefs (not mounted, or root's only: CAP_BPF and CAP_PERFMON do not open
    // it) the syscall's existence comes from BTF, through any of the functions the kernel's
    // SYSCALL_DEFINE makes of it (BTF may keep only some); its argument names do not.
    bool in_btf = false;
    for (const char* prefix : {"__x64_sys_", "__arm64_sys_", "__do_sys_", "__se_sys_", "sys_"}) {
      in_btf = in_btf || ctx.btf.findFunction(prefix + t.syscall.text);
    }
    if (!in_btf) {
      ctx.diags.report(DiagKind::UnknownSyscall, t.syscall.range,
                       fmt::format("no syscall `{}` in this kernel's BTF, and tracefs, which "
                                   "lists them all, cannot be read", t.syscall.text))
          .note(events.error().message);
      return std::nullopt;
    }
    out.event = "sys_enter_" + t.syscall.text;
    if (auto format = syscallRecordFormat(out.event)) {
      // Named as kq's table of Linux's system calls names them.
      uint32_t i = 0;
      for (const host::TracepointField& field : format->fields) {
        if (field.name == "__syscall_nr") continue;
        out.args.push_back({field.name, typeFromCString(ctx, field.type, field.size, field.is_signed), i++});
      }
      out.format = std::move(*format);
      out.exit_ret_offset = 16;
      return out;
    }
    ctx.diags.report(DiagKind::UncheckedProbe, t.syscall.range,
                     fmt::format("arguments of `{}` are known only as arg0..arg5: {}",
                                 t.syscall.text, events.error().message));
    for (uint32_t i = 0; i < 6; ++i) out.args.push_back({"", ctx.types.u64(), i});
    out.event = "sys_enter_" + t.syscall.text;
    return out;
  }
  std::vector<std::string> names;
  std::vector<std::string> matched;
  for (const std::string& e : *events) {
    if (e.rfind("sys_enter_", 0) != 0) continue;
    names.push_back(e.substr(10));
    if (btf::globMatch(t.syscall.text, names.back())) matched.push_back(names.back());
  }
  if (matched.empty()) {
    Diagnostic& diag = ctx.diags.report(DiagKind::UnknownSyscall, t.syscall.range,
                                        fmt::format("no syscall `{}`", t.syscall.text));
    addDidYouMean(diag, t.syscall.text, views(names));
    return std::nullopt;
  }
  if (matched.size() > 1) {
    out.description += fmt::format(" ({} syscalls)", matched.size());
    for (const std::string& m : matched) out.events.push_back("syscalls:sys_enter_" + m);
    out.syscall_names = syscallEntryNames(out.events, true, out.description);
    if (!out.syscall_names) out.event_names = eventNames(out.events, true, out.description);
    return out;
  }
  out.event = "sys_enter_" + matched.front();
  out.description = "syscall:" + matched.front();  // a glob's one match, by its name
  if (auto format = ctx.kernel.tracepointFormat("syscalls", out.event)) {
    uint32_t i = 0;
    for (const host::TracepointField& field : format->fields) {
      if (field.name == "__syscall_nr") continue;
      out.args.push_back({field.name, typeFromCString(ctx, field.type, field.size, field.is_signed), i++});
    }
    out.format = std::move(*format);
  }
  // The exit record's layout is the kernel's, like the entry's: `ret` is wherever it says.
  if (auto exit = ctx.kernel.tracepointFormat("syscalls", "sys_exit_" + matched.front())) {
    for (const host::TracepointField& field : exit->fields) {
      if (field.name == "ret") out.exit_ret_offset = field.offset;
    }
  }
  return out;
}

/// `handle_request(struct req *req)`: user-space arguments declared with their types, in
/// place of `args`' own; false (reported) when one cannot be.
bool declareParams(Context& ctx, const std::vector<ast::TypedParam>& params, std::vector<ProbeArg>& args,
                   std::string_view limit) {
  for (uint32_t i = 0; i < params.size(); ++i) {
    const ast::TypedParam& p = params[i];
    if (i >= args.size()) {
      ctx.diags.report(DiagKind::Unsupported, p.name_range,
                       fmt::format("{}, and `{}` is argument {}", limit, p.name, i + 1));
      return false;
    }
    const Type* type = resolveTypeName(ctx, p.type);
    if (type->isError()) return false;
    if (!type->isInteger() && !type->isPointer()) {
      ctx.diags.report(DiagKind::InvalidCast, p.type.range,
                       fmt::format("`{}` is passed in a register: declare it as an integer or a "
                                   "pointer, not `{}`", p.name, type->spelling));
      return false;
    }
    args[i] = {p.name, type, i};
  }
  return true;
}

/// The file a uprobe's binary names (`libc` is the C library on the linker's search path);
/// nothing, reported, when no file has that name.
std::optional<std::string> binaryFile(Context& ctx, const std::string& binary, SourceRange at) {
  if (auto path = host::findBinary(binary)) return path;
  ctx.diags.report(DiagKind::UnknownBinary, at,
                   fmt::format("no shared library or program is named `{}`", binary))
      .note("a name without `/` is looked for as a library on the dynamic linker's search path "
            "(/etc/ld.so.conf: `libc`, `libc.so.6`, `c`), then as a program on PATH; give a path "
            "otherwise");
  return std::nullopt;
}

std::optional<ResolvedTarget> resolveUprobe(Context& ctx, const ast::UprobeTarget& t) {
  ResolvedTarget out;
  auto binary = binaryFile(ctx, t.binary, t.binary_range);
  if (!binary) return std::nullopt;
  out.binary = *binary;
  auto symbols = host::readFunctionSymbols(out.binary);
  if (!symbols) {
    ctx.diags.report(DiagKind::UnknownBinary, t.binary_range, symbols.error().message);
    return std::nullopt;
  }
  std::vector<std::string_view> names;
  for (const host::ElfSymbol& s : *symbols) {
    names.push_back(s.name);
    if (btf::globMatch(t.symbol.text, s.name)) out.symbols.push_back(s.name);
  }
  if (out.symbols.empty()) {
    Diagnostic& diag = ctx.diags.report(
        DiagKind::UnknownSymbol, t.symbol.range,
        fmt::format("`{}` has no function `{}`", out.binary, t.symbol.text));
    if (!t.symbol.isGlob()) addDidYouMean(diag, t.symbol.text, names);
    if (symbols->empty()) diag.note("the binary has no symbol table (stripped?)");
    return std::nullopt;
  }
  // User-space functions have no BTF: arguments are registers, as 64-bit integers, unless
  // declared with their types (`handle_request(struct req *req)`).
  for (uint32_t i = 0; i < 6; ++i) out.args.push_back({"", ctx.types.u64(), i});
  if (!declareParams(ctx, t.params, out.args, "kq reads a user-space function's first 6 arguments")) {
    return std::nullopt;
  }
  out.return_type = ctx.types.u64();
  out.attach = {{t.on_return ? AttachKind::Uretprobe : AttachKind::Uprobe, Known::Yes, ""}};
  // A glob that matches one symbol is named by it.
  out.description = fmt::format("{}:{}:{}", t.on_return ? "uretprobe" : "uprobe", out.binary,
                                out.symbols.size() == 1 ? out.symbols.front() : t.symbol.text);
  return out;
}

/// `usdt:PATH:[PROVIDER:]NAME`: the probes the binary's notes declare; each argument typed
/// by its size at every site (8 bytes where sites differ), or as declared.
std::optional<ResolvedTarget> resolveUsdt(Context& ctx, const ast::UsdtTarget& t) {
  ResolvedTarget out;
  auto binary = binaryFile(ctx, t.binary, t.binary_range);
  if (!binary) return std::nullopt;
  out.binary = *binary;
  auto probes = host::readUsdtProbes(out.binary);
  if (!probes) {
    ctx.diags.report(DiagKind::UnknownBinary, t.binary_range, probes.error().message);
    return std::nullopt;
  }
  std::string wanted = (t.provider ? t.provider->text + ":" : "") + t.name.text;
  std::vector<std::string> names;
  for (host::UsdtProbe& probe : *probes) {
    names.push_back(probe.provider + ":" + probe.name);
    if (t.provider && !btf::globMatch(t.provider->text, probe.provider)) continue;
    if (!btf::globMatch(t.name.text, probe.name)) continue;
    out.usdt_probes.push_back(std::move(probe));
  }
  if (out.usdt_probes.empty()) {
    SourceRange at = t.provider ? SourceRange{t.provider->range.file, t.provider->range.begin, t.name.range.end}
                                : t.name.range;
    if (probes->empty()) {
      ctx.diags.report(DiagKind::UnknownSymbol, at, fmt::format("`{}` has no USDT probes", out.binary))
          .note("a program declares them with <sys/sdt.h>'s DTRACE_PROBE or STAP_PROBE (its "
                "`.note.stapsdt` section)");
      return std::nullopt;
    }
    Diagnostic& diag = ctx.diags.report(DiagKind::UnknownSymbol, at,
                                        fmt::format("`{}` has no USDT probe `{}`", out.binary, wanted));
    if (wanted.find_first_of("*?") == std::string::npos) {
      std::vector<std::string> bare;
      for (const std::string& n : names) bare.push_back(n.substr(n.find(':') + 1));
      addDidYouMean(diag, wanted, t.provider ? views(names) : views(bare));
    }
    diag.note(fmt::format("kq list 'usdt:{}:*' shows its {} probes", out.binary, names.size()));
    return std::nullopt;
  }
  // Arguments every site has; each as wide as its widest site, signed if any site is.
  size_t sites = 0, count = SIZE_MAX;
  for (const host::UsdtProbe& probe : out.usdt_probes) {
    for (const host::UsdtSite& site : probe.sites) {
      if (!site.problem.empty()) {
        ctx.diags.report(DiagKind::Unsupported, t.name.range,
                         fmt::format("cannot trace USDT probe `{}:{}` at 0x{:x}: {}", probe.provider,
                                     probe.name, site.address, site.problem));
        return std::nullopt;
      }
      count = std::min(count, site.args.size());
      ++sites;
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t size = 0, smallest = 8;
    bool is_signed = false;
    for (const host::UsdtProbe& probe : out.usdt_probes) {
      for (const host::UsdtSite& site : probe.sites) {
        size = std::max(size, site.args[i].size);
        smallest = std::min(smallest, site.args[i].size);
        is_signed = is_signed || site.args[i].is_signed;
      }
    }
    out.args.push_back({"", ctx.types.integer(size == smallest ? size : 8, is_signed), i});
  }
  std::string limit = fmt::format("USDT probe `{}` has {} argument{}", wanted, count, count == 1 ? "" : "s");
  if (!declareParams(ctx, t.params, out.args, limit)) return std::nullopt;
  out.attach = {{AttachKind::Uprobe, Known::Yes, ""}};
  const host::UsdtProbe& first = out.usdt_probes.front();
  out.description = out.usdt_probes.size() == 1
                        ? fmt::format("usdt:{}:{}:{}", out.binary, first.provider, first.name)
                        : fmt::format("usdt:{}:{} ({} probes)", out.binary, wanted, out.usdt_probes.size());
  if (sites > 1 && out.usdt_probes.size() == 1) out.description += fmt::format(" ({} sites)", sites);
  return out;
}

/// `iter:task`: the kernel's iterator `bpf_iter_task`, whose arguments after its `meta` are
/// what each event sees (`task`; `task`, `fd` and `file` of `iter:task_file`).
std::optional<ResolvedTarget> resolveIter(Context& ctx, const ast::IterTarget& t) {
  auto fn = ctx.btf.findFunction("bpf_iter_" + t.name);
  if (!fn || fn->params.empty()) {
    Diagnostic& diag = ctx.diags.report(DiagKind::UnknownEvent, t.name_range,
                                        fmt::format("the kernel has no BPF iterator `{}`", t.name));
    std::vector<std::string> names;
    for (std::string_view f : ctx.btf.functionNames()) {
      constexpr std::string_view kPrefix = "bpf_iter_";
      if (f.rfind(kPrefix, 0) != 0) continue;
      std::string name(f.substr(kPrefix.size()));
      if (ctx.btf.findStruct("bpf_iter__" + name)) names.push_back(name);
    }
    addDidYouMean(diag, t.name, views(names));
    if (!names.empty()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "`" : ", `") + n + "`";
      diag.note(fmt::format("this kernel iterates {}", list));
    }
    return std::nullopt;
  }
  ResolvedTarget out;
  for (uint32_t i = 1; i < fn->params.size(); ++i) {
    out.args.push_back({fn->params[i].name, ctx.types.fromBtf(fn->params[i].type), i});
  }
  out.attach = {{AttachKind::Iter, Known::Yes, ""}};
  out.description = "iter:" + t.name;
  return out;
}

/// A program type's return value: an enum of its verdicts (`enum xdp_action`, `enum
/// tc_action` of pkt_cls.h's TC_ACT_* defines, which the kernel's BTF lacks), so that each
/// prints by its name and `return == TC_ACT_SHOT` reads as written; an integer for a type
/// without verdicts. The enums are made once per process, as a header's types are: values
/// of a BTF of kq's own, never relocated.
const Type* verdictType(Context& ctx, const host::BpfProgram& prog) {
  const host::Verdicts* verdicts = host::verdictsOf(prog.type);
  if (!verdicts) return ctx.types.integer(prog.return_size ? prog.return_size : 4, prog.return_signed);
  // The kernel's own enum where its BTF has one (`enum xdp_action`), so that the verdict
  // compares with the kernel's values of it.
  if (auto kernel = ctx.btf.findEnum(verdicts->enum_name)) return ctx.types.fromBtf(*kernel);
  // One enum for each set of verdicts: a TC classifier's and a TC action's are the same type.
  static std::mutex mutex;
  static std::map<const host::Verdicts*, std::pair<std::unique_ptr<btf::BtfFile>, int>> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto& [file, id] = made[verdicts];
  if (!file) {
    std::string name(verdicts->enum_name);
    ::btf* built = btf__new_empty();
    id = btf__add_enum(built, name.c_str(), 4);
    for (const auto& [value, enumerator] : verdicts->names) {
      btf__add_enum_value(built, std::string(enumerator).c_str(), value);
    }
    Result<std::unique_ptr<host::BtfView>> view = host::BtfView::copyOf(built);
    btf__free(built);
    std::shared_ptr<const host::BtfView> owned = view ? view.take() : host::BtfView::empty();
    file = std::make_unique<btf::BtfFile>(btf::BtfFile{"verdicts of " + name, owned.get(), true, owned});
  }
  return ctx.types.fromBtf({file.get(), static_cast<btf::TypeId>(id)});
}

/// `bpf:xdp_drop_udp`: fentry (fexit for `return`) on each loaded BPF program the pattern
/// names (by its function's name, its kernel name, or its id), typed by the program's own
/// BTF: its context is the kernel struct the verifier gives a tracing program (`struct
/// xdp_md *` of XDP is a `struct xdp_buff *`, `struct __sk_buff *` of TC a `struct sk_buff *`).
std::optional<ResolvedTarget> resolveBpfProgram(Context& ctx, const ast::BpfProgramTarget& t) {
  Result<std::vector<host::BpfProgram>> loaded = ctx.kernel.bpfPrograms();
  if (!loaded) {
    ctx.diags.report(DiagKind::UnknownEvent, t.program.range, "kq cannot list the loaded BPF programs")
        .note(loaded.error().message);
    return std::nullopt;
  }
  const std::string& pattern = t.program.text;
  bool by_id = !pattern.empty() && pattern.find_first_not_of("0123456789") == std::string::npos;
  std::vector<host::BpfProgram> matched;
  for (const host::BpfProgram& p : *loaded) {
    bool match = by_id ? std::to_string(p.id) == pattern
                       : btf::globMatch(pattern, p.displayName()) || btf::globMatch(pattern, p.name);
    if (match) matched.push_back(p);
  }
  if (matched.empty()) {
    Diagnostic& diag = ctx.diags.report(
        DiagKind::UnknownEvent, t.program.range,
        by_id ? fmt::format("no BPF program of id {} is loaded", pattern)
              : fmt::format("no loaded BPF program is named `{}`", pattern));
    std::vector<std::string> names;
    for (const host::BpfProgram& p : *loaded) names.push_back(p.displayName());
    if (!by_id) addDidYouMean(diag, pattern, views(names));
    diag.note(loaded->empty() ? "no BPF program is loaded now"
                              : fmt::format("`kq list 'bpf:*'` lists those loaded now ({})", loaded->size()));
    return std::nullopt;
  }
  // A glob passes over the programs loaded without BTF, as a function glob passes over what
  // cannot be traced; a name or an id that finds only those says why.
  bool glob = t.program.isGlob();
  auto no_btf = [](const host::BpfProgram& p) { return !p.hasBtf(); };
  if (glob && !std::all_of(matched.begin(), matched.end(), no_btf)) {
    matched.erase(std::remove_if(matched.begin(), matched.end(), no_btf), matched.end());
  }
  for (const host::BpfProgram& p : matched) {
    if (p.hasBtf()) continue;
    ctx.diags
        .report(DiagKind::NotTraceable, t.program.range,
                fmt::format("the BPF program `{}` (id {}) was loaded without BTF", p.name, p.id))
        .note("fentry on a program attaches by its function's BTF type: load it with BTF (`clang -g`)");
    return std::nullopt;
  }
  const host::BpfProgram& first = matched.front();
  for (const host::BpfProgram& p : matched) {
    if (p.type == first.type && p.params.size() == first.params.size()) continue;
    ctx.diags
        .report(DiagKind::ArgumentNotShared, t.program.range,
                fmt::format("`{}` names programs of different kinds: `{}` is {} and `{}` is {}",
                            pattern, first.displayName(), first.type_name, p.displayName(), p.type_name))
        .note("name one kind of program in a probe, and trace the other in one of its own");
    return std::nullopt;
  }
  ResolvedTarget out;
  for (uint32_t i = 0; i < first.params.size(); ++i) {
    const host::BpfProgramParam& param = first.params[i];
    const Type* type = nullptr;
    if (param.kind == host::BpfProgramParam::Kind::Integer) {
      type = ctx.types.integer(param.size, param.is_signed);
    } else if (param.kind == host::BpfProgramParam::Kind::Context) {
      std::optional<std::string_view> kernel = host::kernelContextStruct(first.type, param.type_name);
      std::optional<btf::BtfType> record = kernel ? ctx.btf.findStruct(*kernel) : std::nullopt;
      if (record) type = ctx.types.pointerTo(ctx.types.fromBtf(*record));
    }
    // Other pointers the verifier does not let a tracing program read: no name for them.
    if (type) out.args.push_back({param.name, type, i});
  }
  out.return_type = verdictType(ctx, first);
  out.bpf_programs = std::move(matched);
  out.attach = {{AttachKind::Fentry, Known::Yes, ""}};
  out.description = out.bpf_programs.size() == 1
                        ? "bpf:" + out.bpf_programs.front().displayName()
                        : fmt::format("bpf:{} ({} programs)", pattern, out.bpf_programs.size());
  return out;
}

/// `watchpoint:ADDR:LEN:MODE`: a hardware breakpoint (linux/hw_breakpoint.h's kinds).
std::optional<ResolvedTarget> resolveWatchpoint(Context& ctx, const ast::WatchpointTarget& t) {
  constexpr uint32_t kRead = 1, kWrite = 2, kExecute = 4;
  ResolvedTarget::Watch watch;
  watch.address = t.address;
  if (!t.symbol.empty()) {
    Result<std::optional<uint64_t>> address = ctx.kernel.symbolAddress(t.symbol);
    if (!address) {
      ctx.diags.report(DiagKind::NotAvailableHere, t.address_range,
                       fmt::format("cannot find kernel symbols here: {}", address.error().message))
          .note("kq reads symbol addresses from /proc/kallsyms, as root");
      return std::nullopt;
    }
    if (!*address) {
      Diagnostic& diag = ctx.diags.report(DiagKind::UnknownSymbol, t.address_range,
                                          fmt::format("the kernel has no symbol `{}`", t.symbol));
      if (auto close = closestName(t.symbol, ctx.kernel.symbolNames())) diag.note(fmt::format("did you mean `{}`?", *close));
      return std::nullopt;
    }
    watch.address = **address;
  }
  for (char c : t.mode) {
    uint32_t bit = c == 'r' ? kRead : c == 'w' ? kWrite : c == 'x' ? kExecute : 0;
    if (!bit || (watch.type & bit)) {
      ctx.diags.report(DiagKind::ValueOutOfRange, t.mode_range,
                       fmt::format("a watchpoint fires on `r` (reads), `w` (writes), `rw` or `x` (runs), not `{}`", t.mode));
      return std::nullopt;
    }
    watch.type |= bit;
  }
  if ((watch.type & kExecute) && watch.type != kExecute) {
    ctx.diags.report(DiagKind::ValueOutOfRange, t.mode_range,
                     fmt::format("`x` watches an instruction, and cannot be combined with `r` or `w`: `{}`", t.mode));
    return std::nullopt;
  }
  if (watch.type == kRead) watch.type = kRead | kWrite;  // x86 has no read-only breakpoints (bpftrace's `r` too)
  if (t.length != 1 && t.length != 2 && t.length != 4 && t.length != 8) {
    ctx.diags.report(DiagKind::ValueOutOfRange, t.length_range,
                     fmt::format("a watchpoint covers 1, 2, 4 or 8 bytes, not {}", t.length));
    return std::nullopt;
  }
  if (watch.type == kExecute && t.length != 8) {
    ctx.diags.report(DiagKind::ValueOutOfRange, t.length_range, "an `x` watchpoint covers 8 bytes (a long)");
    return std::nullopt;
  }
  if (watch.address % t.length != 0) {
    ctx.diags.report(DiagKind::ValueOutOfRange, t.address_range,
                     fmt::format("a watchpoint of {} bytes needs an address aligned to {}, not 0x{:x}", t.length,
                                 t.length, watch.address));
    return std::nullopt;
  }
  watch.length = static_cast<uint32_t>(t.length);
  ResolvedTarget out;
  out.attach = {{AttachKind::PerfEvent, Known::Yes, ""}};
  out.watch = watch;
  out.description = fmt::format("watchpoint:{}:{}:{}", t.symbol.empty() ? fmt::format("0x{:x}", t.address)
                                                                        : fmt::format("kaddr(\"{}\")", t.symbol),
                                t.length, t.mode);
  return out;
}

/// `software:page-faults:100`: the event by its name or alias; the period given, or the
/// event's own.
std::optional<ResolvedTarget> resolvePerfEvent(Context& ctx, const ast::PerfEventTarget& t) {
  const char* kind = t.hardware ? "hardware" : "software";
  const host::PerfEventKind* event = host::findPerfEvent(t.hardware, t.event);
  if (!event) {
    std::vector<std::string_view> names;
    for (const host::PerfEventKind& k : host::perfEventKinds()) {
      if (k.hardware != t.hardware) continue;
      names.push_back(k.name);
      if (!k.alias.empty()) names.push_back(k.alias);
    }
    Diagnostic& diag = ctx.diags.report(DiagKind::UnknownEvent, t.event_range,
                                        fmt::format("there is no {} event `{}`", kind, t.event));
    addDidYouMean(diag, t.event, names);
    if (host::findPerfEvent(!t.hardware, t.event)) {
      diag.note(fmt::format("`{}` is a {} event: `{}:{}`", t.event, t.hardware ? "software" : "hardware",
                            t.hardware ? "software" : "hardware", t.event));
    } else {
      diag.note(fmt::format("kq list '{}:*' shows them", kind));
    }
    return std::nullopt;
  }
  ResolvedTarget out;
  out.perf_event = event;
  out.perf_frequency_hz = t.frequency_hz;
  out.perf_period = t.frequency_hz ? 0 : t.period ? t.period : event->default_period;
  out.attach = {{AttachKind::PerfEvent, Known::Yes, ""}};
  out.description = fmt::format("{}:{}:{}", kind, event->name,
                                t.frequency_hz ? fmt::format("{}hz", t.frequency_hz) : std::to_string(out.perf_period));
  return out;
}

}  // namespace

void typeByRecord(ResolvedTarget& target, const std::string& because) {
  for (const ProbeArg& arg : target.args) target.handler_args.push_back(arg.name);
  target.args = std::move(target.record_fields);
  target.record_fields.clear();
  target.functions.clear();
  target.attach = {{AttachKind::Tracepoint, Known::Yes, ""}};
  target.record_because = because;
}

std::optional<ResolvedTarget> resolveTarget(Context& ctx, const ast::Target& target) {
  std::optional<ResolvedTarget> out;
  if (const auto* t = std::get_if<ast::FunctionTarget>(&target.kind)) {
    out = resolveFunction(ctx, target, *t);
  } else if (const auto* t = std::get_if<ast::TracepointTarget>(&target.kind)) {
    out = resolveTracepoint(ctx, *t);
  } else if (const auto* t = std::get_if<ast::SyscallTarget>(&target.kind)) {
    out = resolveSyscall(ctx, *t);
  } else if (const auto* t = std::get_if<ast::UprobeTarget>(&target.kind)) {
    out = resolveUprobe(ctx, *t);
  } else if (const auto* t = std::get_if<ast::UsdtTarget>(&target.kind)) {
    out = resolveUsdt(ctx, *t);
  } else if (const auto* t = std::get_if<ast::PacketTarget>(&target.kind)) {
    out = resolvePacket(ctx, target, *t);
  } else if (const auto* t = std::get_if<ast::IntervalTarget>(&target.kind)) {
    out.emplace();
    out->attach = {{AttachKind::PerfEvent, Known::Yes, ""}};
    out->description = fmt::format("interval {}ms", t->period_ns / 1'000'000);
  } else if (const auto* t = std::get_if<ast::ProfileTarget>(&target.kind)) {
    out.emplace();
    out->attach = {{AttachKind::PerfEvent, Known::Yes, ""}};
    out->description = fmt::format("profile {}hz", t->frequency_hz);
  } else if (const auto* t = std::get_if<ast::PerfEventTarget>(&target.kind)) {
    out = resolvePerfEvent(ctx, *t);
  } else if (const auto* t = std::get_if<ast::WatchpointTarget>(&target.kind)) {
    out = resolveWatchpoint(ctx, *t);
  } else if (const auto* t = std::get_if<ast::IterTarget>(&target.kind)) {
    out = resolveIter(ctx, *t);
  } else if (const auto* t = std::get_if<ast::BpfProgramTarget>(&target.kind)) {
    out = resolveBpfProgram(ctx, *t);
  } else if (const auto* t = std::get_if<ast::SessionTarget>(&target.kind)) {
    out.emplace();
    out->attach = {{t->at_end ? AttachKind::End : AttachKind::Begin, Known::Yes, ""}};
    out->description = t->at_end ? "end" : "begin";
  }
  if (out) out->target = &target;
  return out;
}

}  // namespace kq::sema
