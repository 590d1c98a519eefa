#include "serve/serve.h"

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
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "driver/run.h"
#include "host/kernel_info.h"
#include "kq_version.h"
#include "serve/event_log.h"
#include "serve/exposition.h"
#include "serve/http_server.h"
#include "serve/metric_names.h"
#include "serve/remote_write.h"
#include "serve/script.h"

namespace kq::serve {
namespace {

/// How often the scripts' directories are read again for new, changed and removed scripts.
constexpr int kRescanMs = 2000;

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
      if (isServable(name)) {
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
      : options_(options), io_(io), env_(env) {
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    hostname_ = name;
    context_.emplace(ScriptContext{env_, host_, io_.err, events, hostname_, &sites_});
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
        auto now = texts.find((*it)->path());
        if (now == texts.end() || now->second != (*it)->text()) {
          gone.push_back(std::move(*it));
          it = scripts_.erase(it);
        } else {
          texts.erase(now);
          ++it;
        }
      }
    }
    for (auto& script : gone) {
      bool replaced = texts.count(script->path()) > 0;
      io_.err << fmt::format("kq serve: {}: {}\n", script->path(), replaced ? "changed, replacing it" : "removed")
              << std::flush;
      script->stop();
    }
    for (auto& [path, text] : texts) {
      auto script = std::make_unique<Script>(path, text);
      if (text.rfind("\x01unreadable: ", 0) == 0) {
        script->fail(text.substr(13));
      } else if (std::string clash = nameClash(script->name()); !clash.empty()) {
        script->fail(fmt::format("its metrics would be named as {}'s (kq_{}_...): rename one", clash,
                                 script->name()));
      } else {
        script->start(*context_);
      }
      if (!script->error().empty()) {
        // The whole diagnostic (source line, caret, notes) for whoever reads the log.
        std::string full = script->error();
        if (!full.empty() && full.back() != '\n') full += '\n';
        io_.err << fmt::format("kq serve: {}: not served:\n{}", path, full) << std::flush;
      }
      std::lock_guard<std::mutex> lock(scripts_mutex_);
      scripts_.push_back(std::move(script));
      std::sort(scripts_.begin(), scripts_.end(), [](const auto& a, const auto& b) { return a->path() < b->path(); });
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
    for (auto& script : all) script->cancel();
    for (auto& script : all) script->stop();
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
    SelfFamilies self;
    for (const auto& script : scripts_) script->families(scrape_host_, out, self);
    selfFamilies(self, out);
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
      std::string error;
      std::optional<std::string> text = io_.read_file(path, error);
      if (!text) {
        io_.err << fmt::format("kq serve: error: {}: {}\n", path, error);
        status = 1;
        continue;
      }
      Script script(path, *text);
      auto [it, added] = names.emplace(scriptName(path), path);
      if (!added) {
        io_.err << fmt::format("kq serve: error: {} and {} would name their metrics alike (kq_{}_...)\n",
                               it->second, path, it->first);
        status = 1;
      }
      if (!script.check(*context_)) {
        io_.err << script.error();
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
      if (s->name() == name) return s->path();
    }
    return "";
  }

  /// kq's own: what it is, which scripts run, what they lost and what their programs cost.
  void selfFamilies(SelfFamilies& self, std::vector<Family>& out) {
    utsname u{};
    uname(&u);
    out.push_back({"kq_build_info", MetricType::Gauge, "kq's version and the kernel it runs on",
                   {{"", {{"version", KQ_VERSION}, {"kernel", u.release}}, "1"}}});
    for (const auto& script : scripts_) script->selfSamples(self);
    for (Family* f : {&self.up, &self.errors, &self.attached, &self.events, &self.lost, &self.run_ns, &self.runs,
                      &self.series, &self.limit}) {
      out.push_back(std::move(*f));
    }
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
  std::string hostname_;
  runtime::LocalSites sites_;  // before the scripts: each leaves its slots as it stops
  engine::Host host_;         // the loads' kernel features
  engine::Host scrape_host_;  // the scrape thread's symbols
  std::mutex scripts_mutex_;
  std::vector<std::unique_ptr<Script>> scripts_;
  std::set<std::string> reported_;
  std::atomic<bool> ready_{false};
  std::optional<ScriptContext> context_;
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
