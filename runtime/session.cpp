#include "runtime/session.h"

#include "runtime/aggregates.h"

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
#include <vector>

#include <fmt/format.h>

namespace kq::runtime {
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
  const SessionOptions& options;
  std::ostream& out;
  uint64_t events = 0;
  bool done = false;
};

int onEvent(void* ctx, void* data, size_t size) {
  auto* r = static_cast<Reader*>(ctx);
  if (r->done || size < sizeof(EventHeader)) return 0;
  EventHeader header;
  std::memcpy(&header, data, sizeof header);
  if (header.probe_id >= r->plan.layout.probes.size()) return 0;
  r->formatter.event(header, r->plan.layout.probes[header.probe_id],
                     static_cast<const uint8_t*>(data), size);
  ++r->events;
  if (r->options.limit && r->events >= r->options.limit) r->done = true;
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

/// `kq: 12 events, 0 lost`, and for aggregates what did not fit in their tables.
std::string summary(const SessionResult& result, const ProgramPlan& plan) {
  bool records = std::any_of(plan.layout.probes.begin(), plan.layout.probes.end(),
                             [](const ProbeLayout& p) { return !p.aggregate; });
  std::string text = "kq: ";
  if (records) {
    text += fmt::format("{} event{}, {} lost", result.events, result.events == 1 ? "" : "s",
                        result.lost);
    if (result.lost) text += " (the ring buffer was full; --buffer-size makes it larger)";
  }
  if (!plan.layout.aggregates.empty()) {
    if (records) text += "; ";
    text += fmt::format("{} event{} not counted", result.not_counted,
                        result.not_counted == 1 ? "" : "s");
    if (result.not_counted) {
      text += fmt::format(" (a table reached {} groups; group by fewer or coarser keys)",
                          kAggregateGroups);
    }
  }
  return text;
}

}  // namespace

SessionResult runSession(const LoadedObject& object, const ProgramPlan& plan,
                         const SessionOptions& options, std::ostream& out, std::ostream& err) {
  SessionResult result;
  g_stop = false;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int, old_term;
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  int64_t boot_offset = nowNs(CLOCK_REALTIME) - nowNs(CLOCK_MONOTONIC);
  auto formatter = makeFormatter(options.format, plan.layout, options.kernel_btf, boot_offset, out);
  Reader reader{plan, *formatter, options, out};
  ring_buffer* ring = ring_buffer__new(object.mapFd(plan.events_map), onEvent, &reader, nullptr);
  if (!ring) {
    err << "kq: error: cannot read the event ring buffer: " << std::strerror(errno) << "\n";
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return result;
  }
  formatter->begin();
  out.flush();

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
  bool several = plan.layout.queries > 1;
  std::vector<int64_t> ticks;
  for (const AggregateLayout& a : aggregates) {
    ticks.push_back(a.every_ns ? nowNs(CLOCK_MONOTONIC) + static_cast<int64_t>(a.every_ns) : 0);
  }
  auto wall = [&] { return nowNs(CLOCK_REALTIME); };
  while (!g_stop && !reader.done) {
    int timeout_ms = 1000;
    for (size_t i = 0; i < ticks.size(); ++i) {
      if (!ticks[i]) continue;
      int64_t now = nowNs(CLOCK_MONOTONIC);
      if (now >= ticks[i]) {
        printAggregates(object.mapFd(aggregates[i].map), aggregates[i], options.format,
                        options.kernel_btf, wall(), several, out, /*clear=*/true,
                        /*skip_empty=*/false);
        ticks[i] += static_cast<int64_t>(aggregates[i].every_ns);
      }
      timeout_ms = std::min<int>(timeout_ms, static_cast<int>((ticks[i] - now) / 1'000'000 + 1));
    }
    if (deadline) {
      int64_t left = deadline - nowNs(CLOCK_MONOTONIC);
      if (left <= 0) break;
      timeout_ms = std::min(timeout_ms, static_cast<int>(std::min<int64_t>(left / 1'000'000 + 1, 1000)));
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
  if (!reader.done) ring_buffer__consume(ring);
  for (const AggregateLayout& a : aggregates) {
    // With `every`, what is left since the last tick, if anything; otherwise the whole table.
    printAggregates(object.mapFd(a.map), a, options.format, options.kernel_btf, wall(), several,
                    out, /*clear=*/false, /*skip_empty=*/a.every_ns != 0);
  }
  out.flush();
  ring_buffer__free(ring);

  result.events = reader.events;
  result.lost = lostEvents(object.mapFd(plan.lost_map), Lost::RingBufferFull);
  result.not_counted = lostEvents(object.mapFd(plan.lost_map), Lost::TableFull);
  if (result.traced_exited) err << "kq: process " << options.traced << " exited\n";
  err << summary(result, plan) << "\n";
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
