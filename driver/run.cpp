#include "driver/run.h"

#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/diag/render.h"
#include "compiler/ast/visitor.h"
#include "compiler/lower/disassemble.h"
#include "compiler/lower/literal_parameters.h"
#include "compiler/lower/lower.h"
#include "compiler/parse/literals.h"
#include "driver/code_pages.h"
#include "driver/dump_plan.h"
#include "driver/engine_run.h"
#include "driver/io.h"
#include "driver/object_cache.h"
#include "driver/phase_watch.h"
#include "driver/query_sources.h"
#include "engine/engine.h"
#include "runtime/libbpf_log.h"
#include "runtime/live_sites.h"
#include "runtime/loader.h"
#include "runtime/privileges.h"

namespace kq::driver {
namespace {

/// Why -p PID cannot be traced ("no process has PID 7"), or empty. The kernel's process id
/// is a thread group's: the id of a thread that leads none would match nothing.
std::string tracedProcessProblem(uint32_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (pid <= INT32_MAX && std::getline(status, line)) {
    if (line.rfind("Tgid:", 0) != 0) continue;
    uint32_t leader = static_cast<uint32_t>(std::strtoul(line.c_str() + 5, nullptr, 10));
    if (leader == pid) return "";
    return fmt::format("{} is a thread of process {}, not a process; -p {} traces the process",
                       pid, leader, leader);
  }
  return fmt::format("no process has PID {}", pid);
}

/// What decides the object beyond the query's text, a line each: the loaded BPF programs it
/// traces (`bpf:`, packet mode's XDP and TC programs) by id and tag (a program loaded again
/// has a new id, which the object attaches by), and each binary a uprobe reads symbols of,
/// by its device, inode, size and change time (a library upgraded is another object).
std::string probedInputs(const sema::Program& program) {
  std::string out;
  auto add = [&](const sema::ResolvedProbe& probe) {
    for (const sema::ResolvedTarget& t : probe.chain) {
      for (const host::BpfProgram& p : t.bpf_programs) out += fmt::format("\n# bpf program {} {}", p.id, p.tag);
      for (const sema::PacketSite& s : t.packet_sites) {
        if (s.program) out += fmt::format("\n# bpf program {} {}", s.program->id, s.program->tag);
      }
      if (!t.binary.empty()) {
        struct stat st{};
        if (stat(t.binary.c_str(), &st) != 0) {
          out += fmt::format("\n# binary {} unreadable", t.binary);
        } else {
          out += fmt::format("\n# binary {} {} {} {} {}.{}", t.binary, st.st_dev, st.st_ino, st.st_size,
                             st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
        }
      }
    }
  };
  for (const sema::ResolvedQuery& q : program.queries) {
    for (const sema::ResolvedProbe& probe : q.probes) add(probe);
    for (const sema::ResolvedJoin& j : q.joins) add(j.probe);
  }
  return out;
}

/// The probe target of attach group `group`: the resolved target its name describes, in a
/// query of the group's programs; null if none is (a fork follower's group).
const sema::ResolvedTarget* groupTarget(const sema::CheckedProgram& checked, const plan::ProgramPlan& plan,
                                        uint32_t group) {
  if (group >= plan.group_names.size()) return nullptr;
  const std::string& name = plan.group_names[group];
  for (const plan::PlannedProgram& program : plan.programs) {
    if (program.group != group) continue;
    for (uint32_t q : program.queries) {
      if (q >= checked.program.queries.size()) continue;
      const sema::ResolvedQuery& query = checked.program.queries[q];
      auto find = [&](const sema::ResolvedProbe& p) -> const sema::ResolvedTarget* {
        for (const sema::ResolvedTarget& t : p.chain) {
          if (t.description == name || name.rfind(t.description, 0) == 0) return &t;
        }
        return nullptr;
      };
      for (const sema::ResolvedProbe& p : query.probes) {
        if (const sema::ResolvedTarget* t = find(p)) return t;
      }
      for (const sema::ResolvedJoin& j : query.joins) {
        if (const sema::ResolvedTarget* t = find(j.probe)) return t;
      }
    }
  }
  return nullptr;
}

/// A group no attach method is left for, at its probe: why each method was passed over,
/// and what could stand in for a kernel function (a tracepoint of its name).
/// False (nothing reported) when the group is no probe's.
bool reportCannotAttach(const runtime::LoadFailure& failure, const sema::CheckedProgram& checked,
                        const plan::ProgramPlan& plan, const KernelEnvironment& env, Diagnostics& diags) {
  const sema::ResolvedTarget* target = groupTarget(checked, plan, *failure.group);
  if (!target) return false;
  Diagnostic& diag = diags.report(DiagKind::CannotAttach, target->target->range,
                                  fmt::format("cannot attach to {} on this kernel", plan.group_names[*failure.group]));
  for (const std::string& why : failure.reasons) diag.note(why);
  if (std::holds_alternative<ast::BpfProgramTarget>(target->target->kind)) {
    diag.note("only fentry and fexit (BPF trampolines) trace a BPF program: kprobes do not go into "
              "one; without them, the kernel's hooks around it still show its effects "
              "(`kq list 'tracepoint:xdp:*'`: exceptions, redirects)");
    return true;
  }
  if (!std::holds_alternative<ast::FunctionTarget>(target->target->kind)) return true;
  // The compiler's BTF is freed once the load no longer needs it (vmlinux_done): a failure
  // at attach comes after, and goes without the stand-ins BTF would name.
  if (target->functions.size() == 1 && env.btf) {
    for (const std::string& note : sema::standInNotes(*env.btf, *env.kernel, target->functions.front().name)) {
      diag.note(note);
    }
  }
  diag.note("tracepoints attach where kernel functions cannot: kq list 'tracepoint:net:*' shows some");
  return true;
}

/// The largest expression of the program that starts at `offset` of the main file.
std::optional<SourceRange> expressionAt(const sema::CheckedProgram& checked, FileId file,
                                        uint32_t offset) {
  std::optional<SourceRange> best;
  auto consider = [&](const sema::ExprTable& table) {
    for (const auto& [expr, info] : table) {
      if (expr->range.file != file || expr->range.begin != offset) continue;
      if (!best || expr->range.end > best->end) best = expr->range;
    }
  };
  for (const sema::ResolvedQuery& q : checked.program.queries) {
    for (const sema::ResolvedProbe& p : q.probes) consider(p.exprs);
  }
  return best;
}

/// Points a verifier rejection at the kq expression whose code the verifier stopped at.
void reportRejection(const runtime::VerifierRejection& rejection, const std::vector<char>& elf,
                     const sema::CheckedProgram& checked, const SourceManager& sources,
                     FileId file, Diagnostics& diags) {
  auto at = lower::sourceOfInstruction(elf, rejection.program, rejection.instruction);
  SourceRange range{file, 0, 0};
  if (at) {
    uint32_t offset = sources.file(file).offsetOf({at->line, at->column});
    range = expressionAt(checked, file, offset).value_or(SourceRange{file, offset, offset + 1});
  }
  diags.report(DiagKind::VerifierRejected, range,
               "the kernel's verifier rejected the code kq generated for this")
      .note(fmt::format("the verifier said: {}", rejection.message))
      .note("this is a bug in kq; `kq -v` shows the whole verifier log");
}

}  // namespace

std::optional<uint64_t> sessionDuration(const Request& request, Io& io) {
  if (request.duration.empty()) return 0;
  // `2.5s` as well as `2500ms`: a fraction of the unit, to the nanosecond.
  std::string whole = request.duration;
  uint64_t fraction_ns = 0;
  if (size_t dot = whole.find('.'); dot != std::string::npos) {
    size_t unit = whole.find_first_not_of("0123456789", dot + 1);
    std::string digits = whole.substr(dot + 1, unit == std::string::npos ? std::string::npos : unit - dot - 1);
    auto one = parse::decodeNumber("1" + (unit == std::string::npos ? std::string() : whole.substr(unit)));
    auto* per = std::get_if<parse::DecodedNumber>(&one);
    if (!digits.empty() && digits.size() <= 9 && dot > 0 && per && per->unit == ast::NumberUnit::Nanoseconds) {
      uint64_t scale = 1;
      for (size_t i = 0; i < digits.size(); ++i) scale *= 10;
      fraction_ns = static_cast<uint64_t>((static_cast<unsigned __int128>(std::stoull(digits)) * per->value) / scale);
      whole = whole.substr(0, dot) + whole.substr(unit);
    }
  }
  auto parsed = parse::decodeNumber(whole);
  auto* n = std::get_if<parse::DecodedNumber>(&parsed);
  if (n && n->unit == ast::NumberUnit::Nanoseconds) n->value += fraction_ns;
  if (!n || n->unit != ast::NumberUnit::Nanoseconds || n->value == 0) {
    io.err << fmt::format("kq: error: --duration takes a duration like `10s`, not `{}`\n",
                          request.duration);
    return std::nullopt;
  }
  return n->value;
}

bool canLoadPrograms(Io& io) {
  std::vector<std::string> missing =
      runtime::missingTracingCapabilities(runtime::effectiveCapabilities());
  if (missing.empty()) return true;
  io.err << fmt::format("kq: error: loading BPF programs needs CAP_BPF and CAP_PERFMON (or "
                        "root); this process lacks {}; `kq check` works without\n",
                        fmt::join(missing, " and "));
  return false;
}

std::optional<lower::CompiledProgram> lowerAndReport(const sema::CheckedProgram& checked,
                                                     const btf::Btf& btf, const SourceManager& sources,
                                                     FileId file, const lower::LowerOptions& options,
                                                     Diagnostics& diags, bool color, Io& io) {
  std::string error;
  std::optional<lower::CompiledProgram> compiled =
      lower::lowerProgram(checked, btf, sources, file, options, diags, &error);
  renderDiagnostics(diags, sources, io.err, RenderOptions{color});
  if (!compiled && !error.empty()) io.err << "kq: error: " << error << "\n";
  return compiled;
}

int runProgram(const Request& request, const sema::CheckedProgram& checked,
               const SourceManager& sources, FileId file, const KernelEnvironment& env,
               KernelEnvironment* disposable, Diagnostics& diags, bool color, Io& io,
               const RunHooks& hooks) {
  RunEnvironment run(io);  // the caller's host and stop signals, or its own
  runtime::setLibbpfVerbose(request.verbose);
  std::optional<uint64_t> duration = sessionDuration(request, io);
  if (!duration) return 2;
  bool dump_only = request.dump == "ir" || request.dump == "bpf" || request.dump == "plan";
  if (!dump_only && !canLoadPrograms(io)) return 1;

  if (request.pid && !dump_only) {
    if (std::string problem = tracedProcessProblem(request.pid); !problem.empty()) {
      io.err << "kq: error: " << problem << "\n";
      return 1;
    }
  }

  // Ctrl-C while kq compiles or attaches ends it then; a wait of more than a second says so.
  std::optional<PhaseWatch> phases;
  if (io.stops_end_phases) phases.emplace(run.stop(), PhaseWatch::Stops::Any, io.err_is_terminal);
  std::unique_ptr<runtime::ChildCommand> child;
  // A dry run compiles for -c's command (its follower) but never starts it.
  if (!request.command.empty() && !dump_only && !request.dry_run) {
    child = runtime::ChildCommand::start(request.command);
    if (!child) {
      io.err << "kq: error: cannot start `" << request.command << "`: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (phases) phases->setChild(child->pid());
  }

  lower::LowerOptions options;
  // The tracepoint fallback of packet mode, where this kernel may need it (or it is asked for).
  options.packet_tracepoints = env.kernel->hasKprobes() != host::Known::Yes ||
                               request.attach == "tracepoint" || !request.btf.empty();
  options.pid = request.pid;
  options.follow_children = !request.command.empty();
  options.ringbuf_bytes = request.buffer.empty() ? 0 : ringBufferBytes(request.buffer).value_or(0);
  options.want_ir = request.dump == "ir";
  options.live_sites = hooks.sites != nullptr && !dump_only;
  bool slots_only = false;  // some dispatcher left out: an object no other run may reuse
  if (options.live_sites) {
    options.site_attached = [sites = hooks.sites, &slots_only](const plan::PlannedProgram& p) {
      bool attached = sites->find(runtime::livePlace(p)).has_value();
      slots_only = slots_only || attached;
      return attached;
    };
  }
  // A run on this kernel compiles only the methods it may load. A dump shows the whole
  // plan and object, the same on every kernel; --btf FILE is another kernel's.
  bool running_kernel = request.btf.empty();
  runtime::LoadOptions load_options;
  load_options.verifier_log = request.dump == "verifier";
  load_options.defer_detach = true;  // this process ends with its session
  load_options.method = request.attach;
  load_options.features = &run.host().features();
  load_options.sites = options.live_sites ? hooks.sites : nullptr;
  load_options.process = child ? child->pid() : static_cast<pid_t>(request.pid);
  if (running_kernel) {
    load_options.vmlinux = env.btf->vmlinux().btf;
    load_options.vmlinux_attach_id = vmlinuxAttachIds(*env.btf);
  }
  if (running_kernel && !dump_only) {
    options.programs_to_compile = [&load_options](const plan::ProgramPlan& plan) {
      return runtime::programsThisKernelMayLoad(plan, load_options);
    };
  }
  if (phases) phases->begin("compiling the query's programs", "stopped while compiling: nothing was loaded");
  // A query run before on this kernel by this kq starts from the object compiled then.
  std::optional<std::string> cache_key;
  std::filesystem::path cache = running_kernel && !dump_only ? objectCacheDirectory() : std::filesystem::path();
  // A live site's programs read the literals `where` compares from .rodata: the object is
  // kept by the query's shape, and serves the same question asked of other values.
  lower::LiteralParameters literals;
  if (options.live_sites && !cache.empty()) {
    options.literal_parameters = true;
    literals = lower::literalParameters(checked.program, file);
  }
  if (!cache.empty()) {
    // --packet-bytes adds columns the text does not show.
    std::string text = literals.shape(sources.file(file).text());
    if (request.packet_bytes) text += fmt::format("\n# --packet-bytes {}", request.packet_bytes);
    // A program traced by fexit (`bpf:`, packet mode's XDP and TC) attaches by its id; a
    // uprobe's binary may change.
    text += probedInputs(checked.program);
    cache_key = objectCacheKey(sources.file(file).name(), text, options, request.attach);
  }
  std::optional<lower::CompiledProgram> compiled;
  bool compiled_now = false;  // kept in the cache once attached, off the way to the first event
  if (cache_key) compiled = cachedObject(cache, *cache_key);
  if (compiled && !literals.empty() && !lower::setLiteralParameters(compiled->object.elf, literals.bytes)) {
    compiled.reset();
  }
  if (compiled) {
    renderDiagnostics(diags, sources, io.err, RenderOptions{color});  // sema's warnings, as compiling says them
    if (request.verbose) io.err << "kq: the compiled object was found in " << cache.string() << "\n";
  } else {
    compiled = lowerAndReport(checked, *env.btf, sources, file, options, diags, color, io);
    if (!compiled) return 1;
    compiled_now = true;
  }
  if (request.dump == "ir") {
    io.out << compiled->object.ir;
    return 0;
  }
  if (request.dump == "plan") {
    dumpPlan(compiled->plan, io.out);
    return 0;
  }
  if (request.dump == "bpf") {
    auto text = lower::disassemble(compiled->object.elf, sources.file(file));
    if (!text) {
      io.err << "kq: error: " << text.error().message << "\n";
      return 1;
    }
    io.out << *text;
    return 0;
  }

  // A one-shot session needs the compiler's code no more (the REPL compiles again).
  if (disposable) dropCodePages();

  // The compiler's BTF is the running kernel's (not --btf FILE's): the kernel's feature
  // probes read it. Unless the REPL keeps it, it goes before libbpf parses its own copy.
  if (disposable) load_options.vmlinux_done = [disposable] { disposable->btf.reset(); };
  engine::Engine engine(run.host());
  if (phases) {
    phases->begin(fmt::format("loading and attaching {} {}", compiled->plan.programs.size(),
                              compiled->plan.programs.size() == 1 ? "program" : "programs"),
                  "stopped while attaching: what was attached goes as kq exits");
  }
  runtime::LoadResult loaded = engine.load(compiled->object.elf, compiled->plan, load_options);
  if (!loaded.object) {
    const runtime::LoadFailure& failure = *loaded.failure;
    if (failure.verifier && failure.verifier->instruction >= 0) {
      Diagnostics rejection;
      reportRejection(*failure.verifier, compiled->object.elf, checked, sources, file, rejection);
      renderDiagnostics(rejection, sources, io.err, RenderOptions{color});
      if (request.verbose) io.err << failure.verifier->log << "\n";
      return 1;
    }
    Diagnostics cannot;
    if (failure.group && reportCannotAttach(failure, checked, compiled->plan, env, cannot)) {
      renderDiagnostics(cannot, sources, io.err, RenderOptions{color});
      return 1;
    }
    io.err << "kq: error: " << failure.message << "\n";
    return 1;
  }
  if (request.dry_run) return dryRunReport(*loaded.object, compiled->plan, io);
  if (request.verbose) {
    for (const std::string& note : loaded.object->notes()) io.err << "kq: " << note << "\n";
  }
  for (const std::string& line : loaded.object->readyLines(compiled->plan)) io.err << "kq: " << line << "\n";
  io.err.flush();
  if (request.dump == "verifier") {
    for (const auto& [program, log] : loaded.object->verifierLogs()) {
      io.out << "# " << program << "\n" << log << "\n";
    }
    return 0;
  }
  if (child && !run.stop().cancelled()) {
    // `trace begin` comes before anything the command does (its records wait in the ring).
    if (auto failed = loaded.object->runOnce(plan::Attach::Begin)) io.err << "kq: error: " << *failed << "\n";
    // Follow the command (and, through fork, its children) from its first instruction.
    int fd = loaded.object->mapFd(compiled->plan.tracked_map);
    uint32_t pid = static_cast<uint32_t>(child->pid());
    uint8_t one = 1;
    if (fd >= 0) bpf_map_update_elem(fd, &pid, &one, 0);
    child->release();
  }

  // Kept once attached, off the way to the first event; but before a live site's job says
  // it is attached, as the next job (of the same shape, it may be) follows at once.
  bool keep = compiled_now && cache_key && !slots_only;
  if (keep && options.live_sites) {
    keepObject(cache, *cache_key, *compiled, queryLimits(checked), querySources(checked, sources));
    keep = false;
  }
  if (hooks.attached) hooks.attached();
  if (keep) keepObject(cache, *cache_key, *compiled, queryLimits(checked), querySources(checked, sources));

  engine::SessionOptions session;
  session.queries = queryLimits(checked);
  session.duration_ns = *duration;
  session.child = child.get();
  session.traced = static_cast<pid_t>(request.pid);
  session.events_printed = hooks.events;
  // Dumps use the running kernel's types, found by name. The compiler's vmlinux BTF is
  // reused (and its ids trusted) only when it is the running kernel's, not `--btf FILE`'s;
  // freed, the file is read again when a type is first shown.
  runtime::KernelTypes kernel_types("/sys/kernel/btf",
                                    running_kernel && env.btf ? env.btf->vmlinux().btf : nullptr,
                                    running_kernel);
  phases.reset();  // the session obeys its stop signals itself
  engine::SessionResult result =
      runSession(engine, *loaded.object, compiled->plan, &kernel_types, request, std::move(session), run.stop(), io,
                 request.record_path.empty() ? std::vector<plan::QuerySource>{} : querySources(checked, sources));
  {
    // Detached before the command is stopped: its ending is not traced. A perf event's
    // detach waits for an RCU grace period: many take seconds, said, and a second Ctrl-C
    // ends kq then.
    std::optional<PhaseWatch> detaching;
    if (io.stops_end_phases) {
      detaching.emplace(run.stop(), PhaseWatch::Stops::Further, io.err_is_terminal);
      if (child) detaching->setChild(child->pid());
      detaching->begin("detaching", "stopped while detaching: the kernel detaches the rest as kq exits");
    }
    loaded.object.reset();
  }
  if (child) {
    // A command never released (kq was stopped before it attached) never ran: nothing to say.
    bool ran = child->released();
    std::string ending = runtime::commandEnding(*child, child->stop(), request.verbose);
    if (ran && !ending.empty() && !result.reader_gone) io.err << "kq: the command " << ending << "\n";
  }
  return result.output_failure.empty() || result.reader_gone ? 0 : 1;
}

}  // namespace kq::driver
