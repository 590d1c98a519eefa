#include "repl/job_table.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace kq::repl {
namespace {

/// Moves each whole line of `pending` into `chunks`, prefixed; with `flush`, the rest too.
void takeLines(std::string& pending, const std::string& prefix, bool error, bool flush,
               std::vector<OutputChunk>& chunks) {
  size_t end = pending.rfind('\n');
  if (flush && !pending.empty() && pending.back() != '\n') {
    pending += '\n';
    end = pending.size() - 1;
  }
  if (end == std::string::npos) return;
  std::string text;
  size_t at = 0;
  while (at <= end) {
    size_t nl = pending.find('\n', at);
    // `[1] ` before a line, `[1]` alone for an empty one.
    text.append(prefix, 0, nl == at ? prefix.size() - 1 : prefix.size());
    text.append(pending, at, nl - at + 1);
    at = nl + 1;
  }
  pending.erase(0, end + 1);
  chunks.push_back({error, std::move(text)});
}

}  // namespace

void StreamOutput::write(const std::vector<OutputChunk>& chunks) {
  for (const OutputChunk& c : chunks) {
    std::ostream& to = c.error ? err_ : out_;
    to << c.text;
    to.flush();
  }
}

Result<int> JobTable::start(const std::string& query, const engine::ForkedRun::Body& body, bool background,
                            bool aggregates) {
  // The job's channel to the keeper of sites, and the sites as they are now.
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    return Error{fmt::format("cannot start the query: {}", std::strerror(errno))};
  }
  std::vector<SiteKeeper::View> view = sites_.view();
  auto job = engine::ForkedRun::start([&](const engine::RunHooks& hooks) {
    close(channel[0]);
    JobSites sites(view, channel[1]);
    engine::RunHooks with_sites = hooks;
    with_sites.sites = &sites;
    return body(with_sites);
  });
  close(channel[1]);
  if (!job) {
    close(channel[0]);
    return job.error();
  }
  Entry entry;
  entry.id = next_id_++;
  entry.channel = channel[0];
  entry.number = background ? next_number_++ : 0;
  entry.query = query;
  entry.aggregates = aggregates;
  entry.job = job.take();
  entries_.push_back(std::move(entry));
  return entries_.back().number;
}

std::vector<pollfd> JobTable::pollFds() const {
  std::vector<pollfd> fds;
  for (const Entry& e : entries_) {
    for (int fd : {e.job->outFd(), e.job->errFd(), e.job->attachFd(), e.channel}) {
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
  }
  return fds;
}

void JobTable::passOn(Entry& entry, std::string& out, std::string& err, bool flush,
                      std::vector<OutputChunk>& chunks) {
  // The foreground's output, and a background job's before it attached (its errors, which
  // the prompt waits for), pass as they come; a background job's, a line at a time.
  if (entry.number == 0 || !entry.announced) {
    if (!out.empty()) chunks.push_back({false, std::move(out)});
    if (!err.empty()) chunks.push_back({true, std::move(err)});
    return;
  }
  std::string prefix = fmt::format("[{}] ", entry.number);
  entry.out_line += out;
  entry.err_line += err;
  takeLines(entry.out_line, prefix, false, flush, chunks);
  takeLines(entry.err_line, prefix, true, flush, chunks);
}

std::optional<int> JobTable::collect(JobOutput& output) {
  std::optional<int> status;
  std::vector<OutputChunk> chunks;
  for (Entry& e : entries_) {
    std::string out, err;
    bool ended = e.job->collect(out, err);
    sites_.read(e.channel, e.id);
    if (e.number != 0 && !e.announced && e.job->attached()) {
      // What it said while loading (on standard error: -v's notes), then its announcement;
      // its standard output (the header) comes after.
      std::string none;
      passOn(e, none, err, false, chunks);
      err.clear();
      e.announced = true;
      chunks.push_back({false, fmt::format("[{}] {}\n", e.number, e.query)});
    }
    passOn(e, out, err, ended, chunks);
    if (!ended) continue;
    if (e.number == 0 || !e.announced) status = e.job->status();
    std::string prefix = e.announced ? fmt::format("[{}] ", e.number) : "";
    if (e.job->crashed()) {
      chunks.push_back({true, fmt::format("{}kq: internal error: the query's process was {}\n"
                                          "  please report it with the query\n",
                                          prefix, e.job->ending())});
    } else if (e.announced) {
      const char* how = e.stopped ? "stopped" : "done";
      chunks.push_back({false, fmt::format("[{}] {}  {}\n", e.number, how, e.query)});
    }
  }
  auto gone = std::stable_partition(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.job->finished(); });
  for (auto it = gone; it != entries_.end(); ++it) {
    sites_.ended(it->id);
    close(it->channel);
  }
  entries_.erase(gone, entries_.end());
  // A job still starting may be about to take a slot of a site no one else holds.
  bool starting = std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.job->attached(); });
  if (!starting) sites_.closeUnheld();
  if (!chunks.empty()) output.write(chunks);
  return status;
}

bool JobTable::hasForeground() const {
  return std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.number == 0; });
}

bool JobTable::hasStarting() const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const Entry& e) { return e.number != 0 && !e.announced; });
}

void JobTable::interruptForeground() {
  for (const Entry& e : entries_) {
    if (e.number == 0 || !e.announced) e.job->signal(SIGINT);
  }
}

bool JobTable::stop(int number) {
  for (Entry& e : entries_) {
    if (e.number == number && number != 0) {
      e.stopped = true;
      e.job->signal(SIGTERM);
      return true;
    }
  }
  return false;
}

void JobTable::stopAll() {
  for (Entry& e : entries_) {
    e.stopped = true;
    e.job->signal(SIGTERM);
  }
}

void JobTable::killAll() {
  for (const Entry& e : entries_) e.job->signal(SIGKILL);
}

void JobTable::list(std::ostream& out) const {
  for (const Entry& e : entries_) {
    if (e.number == 0 || !e.announced) continue;
    uint64_t n = e.job->events();
    std::string seen = e.aggregates ? "aggregating" : fmt::format("{} event{}", n, n == 1 ? "" : "s");
    out << fmt::format("[{}] {}  {}\n", e.number, seen, e.query);
  }
}

}  // namespace kq::repl
