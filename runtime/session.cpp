#include "runtime/session.h"

#include "runtime/aggregates.h"
#include "runtime/query_ends.h"
#include "runtime/session_summary.h"
#include "runtime/symbols.h"
#include "runtime/type_dump.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace kq::runtime {

/// How long after an interval ends its table is read: events that began in it finish.
constexpr int64_t kTickGraceNs = 2'000'000;
namespace {

std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop = true; }

int64_t nowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Reader {
  const ProgramPlan& plan;
  Formatter& formatter;
  QueryEnds& ends;
  uint64_t events = 0;
  std::vector<uint32_t> reached_limit;  // queries to detach once the read is over
};

int onEvent(void* ctx, void* data, size_t size) {
  auto* r = static_cast<Reader*>(ctx);
  if (size < sizeof(EventHeader)) return 0;
  EventHeader header;
  std::memcpy(&header, data, sizeof header);
  if (header.probe_id >= r->plan.layout.probes.size()) return 0;
  const ProbeLayout& probe = r->plan.layout.probes[header.probe_id];
  if (r->ends.ended(probe.query)) return 0;
  r->formatter.event(header, probe, static_cast<const uint8_t*>(data), size);
  ++r->events;
  if (r->ends.printed(probe.query)) r->reached_limit.push_back(probe.query);
  return 0;
}

uint64_t lostEvents(int fd, Lost why) {
  if (fd < 0) return 0;
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return 0;
  std::vector<uint64_t> values(static_cast<size_t>(cpus), 0);
  uint32_t key = static_cast<uint32_t>(why);
  if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) return 0;
  uint64_t total = 0;
  for (uint64_t v : values) total += v;
  return total;
}

/// Prints the tables of one query's aggregates (or of all, with `query` empty) as at the
/// end of the session, once each.
class Tables {
 public:
  Tables(const LoadedObject& object, const ProgramPlan& plan, const SessionOptions& options,
         const QueryEnds& ends, TypeDumper& types, std::ostream& out)
      : object_(object), plan_(plan), options_(options), ends_(ends), types_(types), out_(out),
        printed_(plan.layout.aggregates.size(), false) {}

  void printFinal(std::optional<uint32_t> query) {
    const auto& aggregates = plan_.layout.aggregates;
    for (size_t i = 0; i < aggregates.size(); ++i) {
      const AggregateLayout& a = aggregates[i];
      if (printed_[i] || (query && a.query != *query)) continue;
      printed_[i] = true;
      // With `every`, what is left since the last tick, if anything; otherwise the whole table.
      print(a, /*clear=*/false, /*skip_empty=*/a.every_ns != 0);
    }
  }

  void print(const AggregateLayout& a, bool clear, bool skip_empty) {
    printAggregates(object_.mapFd(a.map), a, options_.format, types_,
                    nowNs(CLOCK_REALTIME), plan_.layout.queries > 1, out_, clear, skip_empty,
                    ends_.tableRows(a.query));
  }

 private:
  const LoadedObject& object_;
  const ProgramPlan& plan_;
  const SessionOptions& options_;
  const QueryEnds& ends_;
  TypeDumper& types_;
  std::ostream& out_;
  std::vector<bool> printed_;
};

}  // namespace

SessionResult runSession(LoadedObject& object, const ProgramPlan& plan,
                         const SessionOptions& options, std::ostream& out, std::ostream& err) {
  SessionResult result;
  g_stop = false;
  refreshKernelSymbols();  // modules may have come and gone since the last session
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int, old_term;
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  int64_t boot_offset = nowNs(CLOCK_REALTIME) - nowNs(CLOCK_MONOTONIC);
  // Every field's type is found once, here, not as events arrive.
  TypeDumper types(options.kernel_types);
  types.prepare(plan.layout);
  auto formatter = makeFormatter(options.format, plan.layout, types, boot_offset, out);
  QueryEnds ends(options.queries, plan.layout, nowNs(CLOCK_MONOTONIC));
  Reader reader{plan, *formatter, ends};
  Tables tables(object, plan, options, ends, types, out);
  ring_buffer* ring = ring_buffer__new(object.mapFd(plan.events_map), onEvent, &reader, nullptr);
  if (!ring) {
    err << "kq: error: cannot read the event ring buffer: " << std::strerror(errno) << "\n";
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return result;
  }
  formatter->begin();
  out.flush();
  // A query that ended: its programs detached, its tables printed as at the end.
  auto endQuery = [&](uint32_t query) {
    object.detach(query);
    tables.printFinal(query);
  };

  // Wait on the ring buffer and, with -c or -p, on the process's exit (a pidfd), so that
  // neither new events nor the end of the process waits for a timeout.
  int64_t deadline = options.duration_ns ? nowNs(CLOCK_MONOTONIC) + options.duration_ns : 0;
  int epoll = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ring_event{EPOLLIN, {.u32 = 0}};
  epoll_ctl(epoll, EPOLL_CTL_ADD, ring_buffer__epoll_fd(ring), &ring_event);
  pid_t watched = options.child ? options.child : options.traced;
  int pidfd = watched ? static_cast<int>(syscall(SYS_pidfd_open, watched, 0)) : -1;
  if (pidfd >= 0) {
    epoll_event child_event{EPOLLIN, {.u32 = 1}};
    epoll_ctl(epoll, EPOLL_CTL_ADD, pidfd, &child_event);
  }
  // `every`: each aggregate query's next tick.
  const auto& aggregates = plan.layout.aggregates;
  std::vector<int64_t> ticks;
  for (const AggregateLayout& a : aggregates) {
    // Ticks just after the end of each interval of the clock (the kernel counts each event
    // in the interval its time falls in), so every table is a whole interval.
    int64_t every = static_cast<int64_t>(a.every_ns);
    ticks.push_back(every ? (nowNs(CLOCK_MONOTONIC) / every + 1) * every + kTickGraceNs : 0);
  }
  auto msUntil = [](int64_t when) {
    int64_t left = when - nowNs(CLOCK_MONOTONIC);
    return static_cast<int>(std::clamp<int64_t>(left / 1'000'000 + 1, 0, 1000));
  };
  while (!g_stop && !ends.allEnded()) {
    int timeout_ms = 1000;
    for (size_t i = 0; i < ticks.size(); ++i) {
      if (!ticks[i] || ends.ended(aggregates[i].query)) continue;
      if (nowNs(CLOCK_MONOTONIC) >= ticks[i]) {
        tables.print(aggregates[i], /*clear=*/true, /*skip_empty=*/false);
        ticks[i] += static_cast<int64_t>(aggregates[i].every_ns);
      }
      timeout_ms = std::min(timeout_ms, msUntil(ticks[i]));
    }
    if (auto next = ends.nextDeadline()) {
      if (nowNs(CLOCK_MONOTONIC) >= *next) {
        ring_buffer__consume(ring);  // the events before its `for` ran out are still shown
        for (uint32_t query : ends.expire(nowNs(CLOCK_MONOTONIC))) endQuery(query);
        continue;
      }
      timeout_ms = std::min(timeout_ms, msUntil(*next));
    }
    if (deadline) {
      if (nowNs(CLOCK_MONOTONIC) >= deadline) break;
      timeout_ms = std::min(timeout_ms, msUntil(deadline));
    }
    if (watched && pidfd < 0) timeout_ms = std::min(timeout_ms, 50);  // no pidfd: poll
    epoll_event events[2];
    int n = epoll_wait(epoll, events, 2, timeout_ms);
    if (n < 0 && errno != EINTR) {
      err << "kq: error: waiting for events failed: " << std::strerror(errno) << "\n";
      break;
    }
    int consumed = ring_buffer__consume(ring);
    if (consumed < 0 && consumed != -EINTR) {
      err << "kq: error: reading events failed: " << std::strerror(-consumed) << "\n";
      break;
    }
    for (uint32_t query : reader.reached_limit) endQuery(query);
    reader.reached_limit.clear();
    out.flush();
    if (options.child) {
      int status = 0;
      if (waitpid(options.child, &status, WNOHANG) == options.child) {
        result.child_status = status;
        break;
      }
    } else if (options.traced) {
      bool exited = pidfd >= 0 ? std::any_of(events, events + std::max(n, 0),
                                             [](const epoll_event& e) { return e.data.u32 == 1; })
                               : kill(options.traced, 0) != 0 && errno == ESRCH;
      if (exited) {
        result.traced_exited = true;
        break;
      }
    }
  }
  if (pidfd >= 0) close(pidfd);
  close(epoll);
  // Events already in the buffer when the session ends are still shown, then the tables.
  ring_buffer__consume(ring);
  tables.printFinal(std::nullopt);
  out.flush();
  ring_buffer__free(ring);

  result.events = reader.events;
  int lost_fd = object.mapFd(plan.lost_map);
  for (uint32_t why = 0; why < kLostReasons; ++why) {
    result.lost[why] = lostEvents(lost_fd, static_cast<Lost>(why));
  }
  if (result.traced_exited) err << "kq: process " << options.traced << " exited\n";
  err << sessionSummary(result, plan, options.format) << "\n";
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

std::unique_ptr<ChildCommand> ChildCommand::start(const std::string& command) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  if (pid == 0) {
    // Wait for the probes to be attached, then become the command.
    close(fds[1]);
    char go;
    if (read(fds[0], &go, 1) != 1) _exit(127);
    signal(SIGINT, SIG_DFL);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[0]);
  std::unique_ptr<ChildCommand> child(new ChildCommand());
  child->pid_ = pid;
  child->release_fd_ = fds[1];
  return child;
}

void ChildCommand::release() {
  if (released_) return;
  released_ = true;
  char go = 1;
  if (write(release_fd_, &go, 1) != 1) {
    // The child is gone already; the session notices when it waits.
  }
  close(release_fd_);
  release_fd_ = -1;
}

ChildCommand::~ChildCommand() {
  if (!released_) {
    // Never released (kq failed before attaching): the command must not run.
    kill(pid_, SIGKILL);
    close(release_fd_);
  }
  int status;
  waitpid(pid_, &status, released_ ? WNOHANG : 0);
}

}  // namespace kq::runtime
