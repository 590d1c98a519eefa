#include "serve/serve.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "compiler/diag/render.h"
#include "compiler/parse/parse.h"
#include "driver/query_sources.h"
#include "driver/run.h"
#include "driver/run_object.h"
#include "engine/engine.h"
#include "engine/table.h"
#include "kq_version.h"
#include "runtime/type_dump.h"
#include "engine/sinks.h"
#include "serve/event_log.h"
#include "serve/exposition.h"
#include "serve/http_server.h"
#include "serve/metric_names.h"
#include "serve/remote_write.h"
#include "serve/serve_check.h"

namespace kq::serve {
namespace {

/// How often the scripts' directories are read again for new, changed and removed scripts.
constexpr int kRescanMs = 2000;

const char* kLostNames[plan::kLostReasons] = {"ring_buffer_full", "table_full", "stash_full",
                                              "stash_missing", "table_no_memory"};

/// One script (a `.kq` file, or an object `kq build` wrote): what it was made from, what
/// became of it, and, while it runs, its session.
struct Script {
  std::string path;
  std::string name;  // its part of its families' names
  std::string text;  // the file's bytes, to see it change
  bool is_object = false;

  // A `.kq` file's, while it is checked and compiled.
  SourceManager sources;
  FileId file = 0;
  std::optional<ast::Script> ast;
  std::optional<sema::CheckedProgram> checked;
  std::vector<char> elf;  // an object's bytes, read by check()

  // What runs: compiled here, or read from the object.
  plan::PortablePlan portable;
  std::vector<std::set<std::string>> seconds;  // by query: its aggregates of nanoseconds
  std::vector<bool> aggregates;                // by query: whether scrapes read it
  std::unique_ptr<runtime::KernelTypes> types;  // the events' dumps
  std::unique_ptr<runtime::LoadedObject> object;
  std::string error;  // why it does not run; empty while it does

  // Its session, in a thread of its own, on a Host of its own (Hosts are not shared
  // between threads).
  std::unique_ptr<engine::Host> host;
  engine::Cancellation stop;
  std::thread thread;
  std::mutex mutex;  // guards `session` (the scrape reads its query handles)
  engine::Session* session = nullptr;
  // The scrape's: its own decoder context, off the session's thread.
  std::unique_ptr<runtime::TypeDumper> dumper;

  bool up() const { return error.empty() && object != nullptr; }
};

/// The session's sink: a served script's tables are read by scrapes, not handed here; its
/// events become JSON lines, gathered as the session reads them and written to the log
/// once a read is done.
class ServeSink : public engine::Sink {
 public:
  ServeSink(Script& script, std::ostream& log, EventLog& events, engine::PrintContext& context,
            const std::string& host)
      : script_(script), log_(log), events_(events) {
    engine::JsonOptions options;
    options.event_fields = {{"script", script.name}, {"host", host}};
    options.always_query = true;
    options.rfc3339 = true;
    json_ = engine::makeJsonSink(script.portable.plan, context, lines_, lines_, std::move(options));
  }
  void onEvent(const engine::DecodedEvent& event) override { json_->onEvent(event); }
  void onTable(const engine::Table&) override {}
  void flush() override {
    json_->flush();
    events_.write(lines_.str());
    lines_.str("");
  }
  void onSummary(const engine::SessionResult&) override {
    std::lock_guard<std::mutex> lock(script_.mutex);
    script_.session = nullptr;  // it ends after this
  }
  void onError(const std::string& message) override {
    log_ << fmt::format("kq serve: {}: {}\n", script_.path, message) << std::flush;
  }

 private:
  Script& script_;
  std::ostream& log_;
  EventLog& events_;
  std::ostringstream lines_;
  std::unique_ptr<engine::Sink> json_;
};

std::string rendered(const Diagnostics& diags, const SourceManager& sources) {
  std::ostringstream out;
  renderDiagnostics(diags, sources, out, RenderOptions{false});
  return out.str();
}

/// Why a script is not served, on one line: a rendered diagnostic's first line (`file:1:2:
/// error: what`, not its source and caret), or a load failure's lines joined (`cannot
/// attach to f: fentry: ...; kprobe: ...`).
std::string firstLine(const std::string& text) {
  std::string first = text.substr(0, text.find('\n'));
  if (first.empty() || first.back() != ':') return first;
  std::string joined;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    size_t start = line.find_first_not_of(' ');
    if (start != std::string::npos) {
      if (!joined.empty()) joined += joined.back() == ':' ? " " : "; ";
      joined += line.substr(start);
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return joined;
}

bool endsWith(const std::string& s, const char* tail) {
  size_t n = std::strlen(tail);
  return s.size() > n && s.compare(s.size() - n, n, tail) == 0;
}

/// The scripts of `paths`: a directory's `.kq` files and objects (`.o`), in name order, or
/// a file itself.
std::vector<std::string> scriptPaths(const std::vector<std::string>& paths, std::vector<std::string>& problems) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      out.push_back(path);  // a script (reading it says why, if it cannot be read)
      continue;
    }
    DIR* dir = opendir(path.c_str());
    if (!dir) {
      problems.push_back(fmt::format("{}: {}", path, std::strerror(errno)));
      continue;
    }
    std::vector<std::string> found;
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if ((endsWith(name, ".kq") || endsWith(name, ".o")) && name[0] != '.') {
        found.push_back(path + (path.back() == '/' ? "" : "/") + name);
      }
    }
    closedir(dir);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

class Server {
 public:
  Server(const ServeOptions& options, driver::Io& io, driver::KernelEnvironment& env, EventLog& events)
      : options_(options), io_(io), env_(env), events_(events) {
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    hostname_ = name;
  }

  /// Reads the directories again: starts new scripts, replaces changed ones, stops removed
  /// ones; the others run on untouched.
  void rescan() {
    std::vector<std::string> problems;
    std::vector<std::string> paths = scriptPaths(options_.paths, problems);
    for (const std::string& p : problems) {
      if (reported_.insert(p).second) io_.err << "kq serve: " << p << "\n" << std::flush;
    }
    std::map<std::string, std::string> texts;
    for (const std::string& path : paths) {
      std::string error;
      std::optional<std::string> text = io_.read_file(path, error);
      texts[path] = text ? *text : "\x01unreadable: " + error;
    }
    std::vector<std::unique_ptr<Script>> gone;
    {
      std::lock_guard<std::mutex> lock(scripts_mutex_);
      for (auto it = scripts_.begin(); it != scripts_.end();) {
        auto now = texts.find((*it)->path);
        if (now == texts.end() || now->second != (*it)->text) {
          gone.push_back(std::move(*it));
          it = scripts_.erase(it);
        } else {
          texts.erase(now);
          ++it;
        }
      }
    }
    for (auto& script : gone) {
      bool replaced = texts.count(script->path) > 0;
      io_.err << fmt::format("kq serve: {}: {}\n", script->path, replaced ? "changed, replacing it" : "removed")
              << std::flush;
      stopScript(*script);
    }
    for (auto& [path, text] : texts) {
      auto script = std::make_unique<Script>();
      script->path = path;
      script->name = scriptName(path);
      script->text = text;
      if (text.rfind("\x01unreadable: ", 0) == 0) {
        script->error = text.substr(13);
      } else if (std::string clash = nameClash(script->name); !clash.empty()) {
        script->error = fmt::format("its metrics would be named as {}'s (kq_{}_...): rename one", clash,
                                    script->name);
      } else {
        start(*script);
      }
      if (!script->error.empty()) {
        // The whole diagnostic (source line, caret, notes) for whoever reads the log.
        std::string full = script->error;
        if (!full.empty() && full.back() != '\n') full += '\n';
        io_.err << fmt::format("kq serve: {}: not served:\n{}", path, full) << std::flush;
      }
      std::lock_guard<std::mutex> lock(scripts_mutex_);
      scripts_.push_back(std::move(script));
      std::sort(scripts_.begin(), scripts_.end(), [](const auto& a, const auto& b) { return a->path < b->path; });
    }
    ready_ = true;
  }

  void stopAll() {
    std::vector<std::unique_ptr<Script>> all;
    {
      std::lock_guard<std::mutex> lock(scripts_mutex_);
      all = std::move(scripts_);
      scripts_.clear();
    }
    for (auto& script : all) script->stop.cancel();
    for (auto& script : all) stopScript(*script);
  }

  HttpResponse answer(const HttpRequest& request) {
    if (request.path == "/metrics") {
      Format format = formatFor(request.accept);
      return {200, contentType(format), render(families(), format)};
    }
    if (request.path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
    if (request.path == "/readyz") {
      if (ready_) return {200, "text/plain; charset=utf-8", "ready\n"};
      return {503, "text/plain; charset=utf-8", "loading scripts\n"};
    }
    if (request.path == "/") {
      return {200, "text/plain; charset=utf-8", "kq serve: metrics at /metrics; /healthz, /readyz\n"};
    }
    return {404, "text/plain; charset=utf-8", "not found: kq serve answers /metrics, /healthz and /readyz\n"};
  }

  /// Every family, the scripts' tables then kq's own.
  std::vector<Family> families() {
    std::lock_guard<std::mutex> lock(scripts_mutex_);
    std::vector<Family> out;
    Family series{"kq_query_series", MetricType::Gauge,
                  "the groups a query's table holds: each is one series of each of the query's families", {}};
    Family limit{"kq_query_series_limit", MetricType::Gauge,
                 "the groups a query's table can hold (config max_groups); the events of more are counted in "
                 "kq_query_lost_events_total{cause=\"table_full\"}", {}};
    for (const auto& script : scripts_) {
      if (!script->up()) continue;
      const plan::ProgramPlan& plan = script->portable.plan;
      engine::PrintContext context{scrape_host_, *script->dumper, scrape_host_, scrape_host_.bootOffset()};
      engine::RecordDecoder decoder(plan.layout, context);
      for (const plan::AggregateLayout& layout : plan.layout.aggregates) {
        engine::BpfTableSource source(script->object->mapFd(layout.map));
        engine::Table table = engine::readTable(source, layout, engine::TableRead::Snapshot, decoder,
                                                engine::nowNs(), engine::nowNs(CLOCK_REALTIME));
        std::vector<Family> got = tableFamilies(table, "kq_" + script->name,
                                                  script->portable.query_sources.at(layout.query).text,
                                                  script->seconds.at(layout.query));
        out.insert(out.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
        std::vector<std::pair<std::string, std::string>> labels = {{"script", script->name},
                                                                   {"query", fmt::format("{}", layout.query + 1)}};
        series.samples.push_back({"", labels, fmt::format("{}", table.rows.size())});
        limit.samples.push_back({"", std::move(labels), fmt::format("{}", plan::tableGroups(plan, layout))});
      }
    }
    selfFamilies(out);
    out.push_back(std::move(series));
    out.push_back(std::move(limit));
    return out;
  }

  void setWriter(const RemoteWriter* writer) { writer_ = writer; }
  const std::string& hostname() const { return hostname_; }

  /// Checks every script as serving it would; the diagnostics on io.err.
  int checkAll() {
    std::vector<std::string> problems;
    std::vector<std::string> paths = scriptPaths(options_.paths, problems);
    for (const std::string& p : problems) io_.err << "kq serve: error: " << p << "\n";
    int status = problems.empty() ? 0 : 1;
    std::map<std::string, std::string> names;
    for (const std::string& path : paths) {
      Script script;
      script.path = path;
      std::string error;
      std::optional<std::string> text = io_.read_file(path, error);
      if (!text) {
        io_.err << fmt::format("kq serve: error: {}: {}\n", path, error);
        status = 1;
        continue;
      }
      script.text = *text;
      auto [it, added] = names.emplace(scriptName(path), path);
      if (!added) {
        io_.err << fmt::format("kq serve: error: {} and {} would name their metrics alike (kq_{}_...)\n",
                               it->second, path, it->first);
        status = 1;
      }
      if (!check(script)) {
        io_.err << script.error;
        status = 1;
      }
    }
    if (paths.empty() && problems.empty()) {
      io_.err << "kq serve: error: no .kq scripts in " << fmt::format("{}", fmt::join(options_.paths, ", ")) << "\n";
      status = 1;
    }
    return status;
  }

 private:
  std::string nameClash(const std::string& name) {
    std::lock_guard<std::mutex> lock(scripts_mutex_);
    for (const auto& s : scripts_) {
      if (s->name == name) return s->path;
    }
    return "";
  }

  /// Parses and checks `script`, as kq serve runs it (an object: reads it and checks its
  /// plan); false with `script.error` set.
  bool check(Script& script) {
    script.is_object = endsWith(script.path, ".o");
    if (script.is_object) return readObject(script);
    FileId file = script.file = script.sources.add(script.path, script.text);
    Diagnostics diags;
    script.ast = parse::parseScript(script.sources, file, diags);
    if (script.ast) script.checked = sema::analyze(*script.ast, script.sources, *env_.btf, *env_.kernel, diags);
    if (script.checked) checkServable(*script.checked, diags);
    if (diags.hasErrors() || !script.checked) {
      script.error = rendered(diags, script.sources);
      if (script.error.empty()) script.error = script.path + ": error: it does not check\n";
      return false;
    }
    script.portable.limits = driver::queryLimits(*script.checked);
    script.portable.query_sources = driver::querySources(*script.checked, script.sources);
    return true;
  }

  /// An object's plan, and whether it can be served here.
  bool readObject(Script& script) {
    std::string error;
    bool not_built = false;
    std::optional<driver::BuiltObject> built = driver::readBuiltObject(script.path, error, &not_built);
    if (!built) {
      script.error = fmt::format("{}: error: {}{}\n", script.path, error,
                                 not_built ? " (kq serve serves objects `kq build SCRIPT -o FILE` writes)" : "");
      return false;
    }
    std::vector<std::string> problems = servingProblems(built->plan);
    if (std::string here = driver::cannotRunHere(built->plan); !here.empty()) problems.insert(problems.begin(), here);
    if (!problems.empty()) {
      script.error.clear();
      for (const std::string& p : problems) script.error += fmt::format("{}: error: {}\n", script.path, p);
      script.error += driver::builtAgainstNote(script.path, built->plan);
      return false;
    }
    script.portable = std::move(built->plan);
    script.elf = std::move(built->elf);
    return true;
  }

  /// Checks, compiles (or reads), loads and attaches `script`, then starts its session.
  void start(Script& script) {
    if (!check(script)) return;
    runtime::LoadOptions load_options;
    load_options.features = &host_.features();
    std::vector<char> elf;
    if (script.is_object) {
      elf = std::move(script.elf);
      // The object's BTF ids are another kernel's (or may be): dumps find types by name.
      script.types = std::make_unique<runtime::KernelTypes>("/sys/kernel/btf", nullptr);
    } else {
      Diagnostics diags;
      std::string error;
      lower::LowerOptions lower_options;
      load_options.vmlinux = env_.btf->vmlinux().btf;
      lower_options.programs_to_compile = [&load_options](const plan::ProgramPlan& plan) {
        return runtime::programsThisKernelMayLoad(plan, load_options);
      };
      std::optional<lower::CompiledProgram> compiled =
          lower::lowerProgram(*script.checked, *env_.btf, script.sources, script.file, lower_options, diags, &error);
      if (!compiled) {
        script.error = diags.hasErrors() ? rendered(diags, script.sources) : script.path + ": error: " + error;
        return;
      }
      script.portable.plan = std::move(compiled->plan);
      elf = std::move(compiled->object.elf);
      // Checked against the running kernel (io.load_kernel("")): its ids are this kernel's.
      script.types = std::make_unique<runtime::KernelTypes>("/sys/kernel/btf", env_.btf->vmlinux().btf);
    }
    const plan::ProgramPlan& plan = script.portable.plan;
    script.seconds.assign(plan.layout.queries, {});
    script.aggregates.assign(plan.layout.queries, false);
    for (uint32_t q = 0; q < plan.layout.queries && q < script.portable.query_sources.size(); ++q) {
      const std::vector<std::string>& names = script.portable.query_sources[q].seconds;
      script.seconds[q].insert(names.begin(), names.end());
    }
    for (const plan::AggregateLayout& table : plan.layout.aggregates) script.aggregates.at(table.query) = true;
    engine::Engine engine(host_);
    runtime::LoadResult loaded = engine.load(elf, plan, load_options);
    if (!loaded.object) {
      script.error = script.path + ": error: " + loaded.failure->message;
      if (script.is_object) script.error += "\n" + driver::builtAgainstNote(script.path, script.portable);
      return;
    }
    script.object = std::move(loaded.object);
    script.dumper = std::make_unique<runtime::TypeDumper>(script.types.get());
    script.dumper->prepare(plan.layout);
    script.host = std::make_unique<engine::Host>();
    Script* s = &script;
    std::ostream& log = io_.err;
    EventLog& events = events_;
    const std::string& host = hostname_;
    script.thread = std::thread([s, &log, &events, &host] {
      engine::Engine engine(*s->host);
      engine::SessionOptions options;
      options.queries = s->portable.limits;
      engine.run(
          *s->object, s->portable.plan, s->types.get(),
          [s, &log, &events, &host](engine::PrintContext& context) {
            return std::make_unique<ServeSink>(*s, log, events, context, host);
          },
          s->stop,
          std::move(options), [s](engine::Session& session) {
            std::lock_guard<std::mutex> lock(s->mutex);
            s->session = &session;
          });
    });
    io_.err << fmt::format("kq serve: {}: serving {} as kq_{}_*, {} programs attached\n", script.path,
                           plan.layout.queries == 1 ? std::string("1 query")
                                                    : fmt::format("{} queries", plan.layout.queries),
                           script.name, script.object->attachedLinks())
            << std::flush;
  }

  /// Ends `script`'s session (its programs detach) and waits for it.
  static void stopScript(Script& script) {
    script.stop.cancel();
    if (script.thread.joinable()) script.thread.join();
    script.object.reset();
  }

  /// kq's own: what it is, which scripts run, what they lost and what their programs cost.
  void selfFamilies(std::vector<Family>& out) {
    utsname u{};
    uname(&u);
    out.push_back({"kq_build_info", MetricType::Gauge, "kq's version and the kernel it runs on",
                   {{"", {{"version", KQ_VERSION}, {"kernel", u.release}}, "1"}}});
    Family up{"kq_script_up", MetricType::Gauge, "1 while a script's queries run; 0 when it failed to check, load or attach", {}};
    Family errors{"kq_script_error", MetricType::Gauge, "why a script is not up (its first diagnostic)", {}};
    Family attached{"kq_script_programs_attached", MetricType::Gauge, "the BPF links a script holds", {}};
    Family lost{"kq_query_lost_events", MetricType::Counter, "events a query did not count, by cause", {}};
    Family events{"kq_query_events", MetricType::Counter, "events a query that selects events wrote as JSON lines", {}};
    Family run_ns{"kq_script_bpf_run_seconds", MetricType::Counter,
                  "time the kernel spent in a script's programs (counted while kernel.bpf_stats_enabled=1)", {}};
    Family runs{"kq_script_bpf_runs", MetricType::Counter,
                "runs of a script's programs (counted while kernel.bpf_stats_enabled=1)", {}};
    for (const auto& script : scripts_) {
      bool is_up = script->up();
      up.samples.push_back({"", {{"script", script->name}}, is_up ? "1" : "0"});
      if (!is_up) {
        errors.samples.push_back({"", {{"script", script->name}, {"error", firstLine(script->error)}}, "1"});
        continue;
      }
      attached.samples.push_back({"", {{"script", script->name}}, fmt::format("{}", script->object->attachedLinks())});
      uint64_t ns = 0, count = 0;
      for (int fd : script->object->programFds()) {
        bpf_prog_info info{};
        uint32_t size = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &size) == 0) {
          ns += info.run_time_ns;
          count += info.run_cnt;
        }
      }
      run_ns.samples.push_back({"_total", {{"script", script->name}}, fmt::format("{:.9f}", ns / 1e9)});
      runs.samples.push_back({"_total", {{"script", script->name}}, fmt::format("{}", count)});
      std::lock_guard<std::mutex> lock(script->mutex);
      if (!script->session) continue;
      for (uint32_t q = 0; q < script->session->queries(); ++q) {
        engine::QueryStats stats = script->session->query(q).stats();
        if (!script->aggregates.at(q)) {
          events.samples.push_back({"_total", {{"script", script->name}, {"query", fmt::format("{}", q + 1)}},
                                    fmt::format("{}", stats.printed)});
        }
        for (uint32_t why = 0; why < plan::kLostReasons; ++why) {
          lost.samples.push_back({"_total",
                                  {{"script", script->name}, {"query", fmt::format("{}", q + 1)}, {"cause", kLostNames[why]}},
                                  fmt::format("{}", stats.lost[why])});
        }
      }
    }
    for (Family* f : {&up, &errors, &attached, &events, &lost, &run_ns, &runs}) out.push_back(std::move(*f));
    if (writer_) {
      out.push_back({"kq_remote_write_requests", MetricType::Counter, "remote-write requests the receiver took",
                     {{"_total", {}, fmt::format("{}", writer_->sent())}}});
      out.push_back({"kq_remote_write_failures", MetricType::Counter,
                     "remote-write requests that failed (kept to send again)",
                     {{"_total", {}, fmt::format("{}", writer_->failed())}}});
      out.push_back({"kq_remote_write_dropped", MetricType::Counter,
                     "remote-write requests dropped: the queue was full, or the receiver refused them",
                     {{"_total", {}, fmt::format("{}", writer_->dropped())}}});
      out.push_back({"kq_remote_write_pending", MetricType::Gauge, "remote-write requests waiting to be sent again",
                     {{"", {}, fmt::format("{}", writer_->pending())}}});
    }
  }

  const ServeOptions& options_;
  driver::Io& io_;
  driver::KernelEnvironment& env_;
  EventLog& events_;
  std::string hostname_;
  engine::Host host_;         // the loads' kernel features
  engine::Host scrape_host_;  // the scrape thread's symbols
  std::mutex scripts_mutex_;
  std::vector<std::unique_ptr<Script>> scripts_;
  std::set<std::string> reported_;
  std::atomic<bool> ready_{false};
  const RemoteWriter* writer_ = nullptr;
};

/// The signals `kq serve` reads (blocked in every thread it starts): SIGINT and SIGTERM
/// stop it, SIGHUP reads the scripts again. A closed connection's SIGPIPE is ignored.
int signalFd() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &set, SFD_CLOEXEC);
}

}  // namespace

int runServe(const ServeOptions& options, driver::Io& io) {
  if (options.paths.empty()) {
    io.err << "kq serve: error: give a directory of .kq scripts (or scripts)\n";
    return 2;
  }
  Result<driver::KernelEnvironment> env = io.load_kernel("");
  if (!env) {
    io.err << "kq serve: error: " << env.error().message << "\n";
    return 1;
  }
  EventLog stdout_events(io.out);
  std::unique_ptr<EventLog> file_events;
  if (!options.events.empty() && !options.check_only) {
    Result<std::unique_ptr<EventLog>> opened = EventLog::open(options.events, options.events_max_bytes);
    if (!opened) {
      io.err << "kq serve: error: " << opened.error().message << "\n";
      return 1;
    }
    file_events = opened.take();
  }
  Server server(options, io, *env, file_events ? *file_events : stdout_events);
  if (options.check_only) return server.checkAll();
  if (!driver::canLoadPrograms(io)) return 1;
  (void)host::mountTracefs();

  Result<std::unique_ptr<HttpServer>> http = HttpServer::listen(options.listen);
  if (!http) {
    io.err << "kq serve: error: " << http.error().message << "\n";
    return 1;
  }
  std::unique_ptr<RemoteWriter> writer;
  if (!options.remote_write.empty()) {
    Result<HttpTarget> target = parseHttpUrl(options.remote_write);
    if (!target) {
      io.err << "kq serve: error: " << target.error().message << "\n";
      return 2;
    }
    RemoteWriteOptions write;
    write.url = options.remote_write;
    write.interval_ms = options.remote_write_ms;
    write.instance = options.instance.empty() ? server.hostname() : options.instance;
    writer = std::make_unique<RemoteWriter>(write, target.take(), [&server] { return server.families(); }, io.err);
    server.setWriter(writer.get());
  }
  int signals = signalFd();
  engine::Cancellation stop_http;
  std::thread http_thread([&] {
    (*http)->serve([&](const HttpRequest& r) { return server.answer(r); }, stop_http.fd());
  });
  io.err << "kq serve: listening on http://" << (*http)->address() << "/metrics\n" << std::flush;
  server.rescan();
  io.err << "kq serve: ready\n" << std::flush;
  engine::Cancellation stop_writer;
  std::thread writer_thread;
  if (writer) writer_thread = std::thread([&] { writer->run(stop_writer.fd()); });
  for (;;) {
    pollfd p{signals, POLLIN, 0};
    int n = ::poll(&p, 1, kRescanMs);
    if (n > 0) {
      signalfd_siginfo info{};
      if (::read(signals, &info, sizeof info) == sizeof info && info.ssi_signo != SIGHUP) break;
    }
    server.rescan();
  }
  io.err << "kq serve: stopping\n" << std::flush;
  if (writer_thread.joinable()) {
    stop_writer.cancel();  // one last push of what was counted
    writer_thread.join();
  }
  server.stopAll();
  stop_http.cancel();
  http_thread.join();
  ::close(signals);
  return 0;
}

}  // namespace kq::serve
