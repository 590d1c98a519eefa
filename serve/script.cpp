#include "serve/script.h"

#include <bpf/bpf.h>

#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "compiler/diag/render.h"
#include "compiler/parse/parse.h"
#include "driver/query_sources.h"
#include "driver/run.h"
#include "driver/run_object.h"
#include "engine/sinks.h"
#include "engine/table.h"
#include "runtime/live_sites.h"
#include "serve/metric_names.h"
#include "serve/serve_check.h"

namespace kq::serve {
namespace {

const char* kLostNames[plan::kLostReasons] = {"ring_buffer_full", "table_full", "stash_full", "stash_missing",
                                              "table_no_memory"};

bool endsWith(const std::string& s, const char* tail) {
  size_t n = std::strlen(tail);
  return s.size() > n && s.compare(s.size() - n, n, tail) == 0;
}

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

}  // namespace

/// The session's sink: a served script's tables are read by scrapes, not handed here; its
/// events become JSON lines, gathered as the session reads them and written to the log
/// once a read is done.
class ServeSink : public engine::Sink {
 public:
  ServeSink(Script& script, std::ostream& log, EventLog& events, engine::PrintContext& context,
            const std::string& host)
      : script_(script), log_(log), events_(events) {
    engine::JsonOptions options;
    options.event_fields = {{"script", script.name_}, {"host", host}};
    options.always_query = true;
    options.rfc3339 = true;
    json_ = engine::makeJsonSink(script.portable_.plan, context, lines_, lines_, std::move(options));
  }
  void onEvent(const engine::DecodedEvent& event) override { json_->onEvent(event); }
  void onTable(const engine::Table&) override {}
  void flush() override {
    json_->flush();
    events_.write(lines_.str());
    lines_.str("");
  }
  void onSummary(const engine::SessionResult&) override {
    std::lock_guard<std::mutex> lock(script_.mutex_);
    script_.session_ = nullptr;  // it ends after this
  }
  void onError(const std::string& message) override {
    log_ << fmt::format("kq serve: {}: {}\n", script_.path_, message) << std::flush;
  }

 private:
  Script& script_;
  std::ostream& log_;
  EventLog& events_;
  std::ostringstream lines_;
  std::unique_ptr<engine::Sink> json_;
};

bool isServable(const std::string& name) {
  return (endsWith(name, ".kq") || endsWith(name, ".o")) && name[0] != '.';
}

SelfFamilies::SelfFamilies()
    : up{"kq_script_up",
         MetricType::Gauge,
         "1 while a script's queries run; 0 when it failed to check, load or attach",
         {}},
      errors{"kq_script_error", MetricType::Gauge, "why a script is not up (its first diagnostic)", {}},
      attached{"kq_script_programs_attached", MetricType::Gauge, "the BPF links a script holds", {}},
      lost{"kq_query_lost_events", MetricType::Counter, "events a query did not count, by cause", {}},
      events{"kq_query_events",
             MetricType::Counter,
             "events a query that selects events wrote as JSON lines",
             {}},
      run_ns{"kq_script_bpf_run_seconds",
             MetricType::Counter,
             "time the kernel spent in a script's programs (counted while kernel.bpf_stats_enabled=1)",
             {}},
      runs{"kq_script_bpf_runs",
           MetricType::Counter,
           "runs of a script's programs (counted while kernel.bpf_stats_enabled=1)",
           {}},
      series{"kq_query_series",
             MetricType::Gauge,
             "the groups a query's table holds: each is one series of each of the query's families",
             {}},
      limit{"kq_query_series_limit",
            MetricType::Gauge,
            "the groups a query's table can hold (config max_groups); the events of more are counted in "
            "kq_query_lost_events_total{cause=\"table_full\"}",
            {}} {}

Script::Script(std::string path, std::string text)
    : path_(std::move(path)),
      name_(scriptName(path_)),
      text_(std::move(text)),
      is_object_(endsWith(path_, ".o")) {}

Script::~Script() { stop(); }

bool Script::check(const ScriptContext& ctx) {
  if (is_object_) return readObject();
  FileId file = file_ = sources_.add(path_, text_);
  Diagnostics diags;
  ast_ = parse::parseScript(sources_, file, diags);
  if (ast_) checked_ = sema::analyze(*ast_, sources_, *ctx.env.btf, *ctx.env.kernel, diags);
  if (checked_) checkServable(*checked_, diags);
  if (diags.hasErrors() || !checked_) {
    error_ = rendered(diags, sources_);
    if (error_.empty()) error_ = path_ + ": error: it does not check\n";
    return false;
  }
  portable_.limits = driver::queryLimits(*checked_);
  portable_.query_sources = driver::querySources(*checked_, sources_);
  return true;
}

/// An object's plan, and whether it can be served here.
bool Script::readObject() {
  std::string error;
  bool not_built = false;
  std::optional<driver::BuiltObject> built = driver::readBuiltObject(path_, error, &not_built);
  if (!built) {
    error_ = fmt::format("{}: error: {}{}\n", path_, error,
                         not_built ? " (kq serve serves objects `kq build SCRIPT -o FILE` writes)" : "");
    return false;
  }
  std::vector<std::string> problems = servingProblems(built->plan);
  std::string here = driver::cannotRunHere(built->plan);
  if (!here.empty()) problems.insert(problems.begin(), here);
  if (!problems.empty()) {
    error_.clear();
    for (const std::string& p : problems) error_ += fmt::format("{}: error: {}\n", path_, p);
    if (!here.empty()) error_ += driver::builtAgainstNote(path_, built->plan);
    return false;
  }
  portable_ = std::move(built->plan);
  elf_ = std::move(built->elf);
  return true;
}

void Script::start(const ScriptContext& ctx) {
  if (!check(ctx)) return;
  hostname_ = ctx.hostname;
  runtime::LoadOptions load_options;
  load_options.features = &ctx.host.features();
  std::vector<char> elf;
  if (is_object_) {
    elf = std::move(elf_);
    // The object's BTF ids are another kernel's (or may be): dumps find types by name.
    types_ = std::make_unique<runtime::KernelTypes>("/sys/kernel/btf", nullptr);
  } else {
    Diagnostics diags;
    std::string error;
    lower::LowerOptions lower_options;
    lower_options.live_sites = ctx.sites != nullptr;
    if (ctx.sites) {
      lower_options.site_attached = [sites = ctx.sites](const plan::PlannedProgram& p) {
        return sites->find(runtime::livePlace(p)).has_value();
      };
    }
    load_options.sites = ctx.sites;
    load_options.vmlinux = ctx.env.btf->vmlinux().btf;
    load_options.vmlinux_attach_id = driver::vmlinuxAttachIds(*ctx.env.btf);
    lower_options.programs_to_compile = [&load_options](const plan::ProgramPlan& plan) {
      return runtime::programsThisKernelMayLoad(plan, load_options);
    };
    std::optional<lower::CompiledProgram> compiled =
        lower::lowerProgram(*checked_, *ctx.env.btf, sources_, file_, lower_options, diags, &error);
    if (!compiled) {
      error_ = diags.hasErrors() ? rendered(diags, sources_) : path_ + ": error: " + error;
      return;
    }
    portable_.plan = std::move(compiled->plan);
    elf = std::move(compiled->object.elf);
    // Checked against the running kernel (io.load_kernel("")): its ids are this kernel's.
    types_ = std::make_unique<runtime::KernelTypes>("/sys/kernel/btf", ctx.env.btf->vmlinux().btf);
  }
  const plan::ProgramPlan& plan = portable_.plan;
  aggregates_.assign(plan.layout.queries, false);
  for (const plan::AggregateLayout& table : plan.layout.aggregates) aggregates_.at(table.query) = true;
  engine::Engine engine(ctx.host);
  runtime::LoadResult loaded = engine.load(elf, plan, load_options);
  if (!loaded.object) {
    error_ = path_ + ": error: " + loaded.failure->message;
    if (is_object_) error_ += "\n" + driver::builtAgainstNote(path_, portable_);
    return;
  }
  object_ = std::move(loaded.object);
  dumper_ = std::make_unique<runtime::TypeDumper>(types_.get());
  dumper_->prepare(plan.layout);
  host_ = std::make_unique<engine::Host>();
  Script* s = this;
  std::ostream& log = ctx.log;
  EventLog& events = ctx.events;
  thread_ = std::thread([s, &log, &events] {
    engine::Engine engine(*s->host_);
    engine::SessionOptions options;
    options.queries = s->portable_.limits;
    engine.run(
        *s->object_, s->portable_.plan, s->types_.get(),
        [s, &log, &events](engine::PrintContext& context) {
          return std::make_unique<ServeSink>(*s, log, events, context, s->hostname_);
        },
        s->stop_, std::move(options),
        [s](engine::Session& session) {
          std::lock_guard<std::mutex> lock(s->mutex_);
          s->session_ = &session;
        });
  });
  ctx.log << fmt::format("kq serve: {}: serving {} as kq_{}_*, {} programs attached\n", path_,
                         plan.layout.queries == 1 ? std::string("1 query")
                                                  : fmt::format("{} queries", plan.layout.queries),
                         name_, object_->attachedLinks())
          << std::flush;
}

void Script::stop() {
  stop_.cancel();
  if (thread_.joinable()) thread_.join();
  object_.reset();
}

void Script::families(engine::Host& scrape_host, std::vector<Family>& out, SelfFamilies& self) {
  if (!up()) return;
  const plan::ProgramPlan& plan = portable_.plan;
  engine::PrintContext context{scrape_host, *dumper_, scrape_host, scrape_host.bootOffset()};
  engine::RecordDecoder decoder(plan.layout, context);
  for (const plan::AggregateLayout& layout : plan.layout.aggregates) {
    engine::BpfTableSource source(object_->mapFd(layout.map));
    engine::Table table = engine::readTable(source, layout, engine::TableRead::Snapshot, decoder,
                                            engine::nowNs(), engine::nowNs(CLOCK_REALTIME));
    std::vector<Family> got = tableFamilies(
        table, "kq_" + name_, portable_.query_sources.at(layout.query).text);
    out.insert(out.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
    std::vector<std::pair<std::string, std::string>> labels = {
        {"script", name_}, {"query", fmt::format("{}", layout.query + 1)}};
    self.series.samples.push_back({"", labels, fmt::format("{}", table.rows.size())});
    self.limit.samples.push_back({"", std::move(labels), fmt::format("{}", plan::tableGroups(plan, layout))});
  }
}

void Script::selfSamples(SelfFamilies& self) {
  bool is_up = up();
  self.up.samples.push_back({"", {{"script", name_}}, is_up ? "1" : "0"});
  if (!is_up) {
    self.errors.samples.push_back({"", {{"script", name_}, {"error", firstLine(error_)}}, "1"});
    return;
  }
  self.attached.samples.push_back({"", {{"script", name_}}, fmt::format("{}", object_->attachedLinks())});
  uint64_t ns = 0, count = 0;
  for (int fd : object_->programFds()) {
    bpf_prog_info info{};
    uint32_t size = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &size) == 0) {
      ns += info.run_time_ns;
      count += info.run_cnt;
    }
  }
  self.run_ns.samples.push_back({"_total", {{"script", name_}}, fmt::format("{:.9f}", ns / 1e9)});
  self.runs.samples.push_back({"_total", {{"script", name_}}, fmt::format("{}", count)});
  std::lock_guard<std::mutex> lock(mutex_);
  if (!session_) return;
  for (uint32_t q = 0; q < session_->queries(); ++q) {
    engine::QueryStats stats = session_->query(q).stats();
    if (!aggregates_.at(q)) {
      self.events.samples.push_back({"_total",
                                     {{"script", name_}, {"query", fmt::format("{}", q + 1)}},
                                     fmt::format("{}", stats.printed)});
    }
    for (uint32_t why = 0; why < plan::kLostReasons; ++why) {
      self.lost.samples.push_back(
          {"_total",
           {{"script", name_}, {"query", fmt::format("{}", q + 1)}, {"cause", kLostNames[why]}},
           fmt::format("{}", stats.lost[why])});
    }
  }
}

}  // namespace kq::serve
