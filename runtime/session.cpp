#include "runtime/session.h"

#include "runtime/aggregates.h"
#include "runtime/fd_output.h"
#include "runtime/query_ends.h"
#include "runtime/session_summary.h"
#include "runtime/stop_request.h"
#include "runtime/symbols.h"
#include "runtime/type_dump.h"
#include "runtime/wall_clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
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
/// How long one read of the ring buffer may go on before the session looks at its clock
/// again (ticks, `for`, -d, the -c command): libbpf reads for as long as records arrive.
constexpr int64_t kReadSliceNs = 50'000'000;
/// The events still in the buffer when the session ends are shown for at most this long,
/// and at most kFinalRecords of them: a flood must not keep kq from ending.
constexpr int64_t kFinalReadNs = 50'000'000;
constexpr uint64_t kFinalRecords = 200'000;
/// What the record callback returns to make libbpf stop reading and return.
constexpr int kPauseReading = -ECANCELED;
namespace {

int64_t nowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Reader {
  const ProgramPlan& plan;
  Formatter& formatter;
  QueryEnds& ends;
  std::ostream& out;
  std::atomic<uint64_t>* shared_events;  // may be null
  uint64_t events = 0;
  std::vector<uint32_t> reached_limit;  // queries to detach once the read is over
  int64_t read_until_ns = 0;            // this read's end (CLOCK_MONOTONIC)
  uint64_t records_left = UINT64_MAX;   // this read's budget of records
  bool final_read = false;              // the last read: a stop request does not cut it

  bool shouldPause() const {
    return (!final_read && stopRequested()) || records_left == 0 || out.bad() ||
           nowNs(CLOCK_MONOTONIC) >= read_until_ns;
  }
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
  if (r->shared_events) r->shared_events->store(r->events, std::memory_order_relaxed);
  if (r->ends.printed(probe.query)) r->reached_limit.push_back(probe.query);
  --r->records_left;
  // The record is consumed whatever this returns; a pause leaves the rest for the next read.
  return r->shouldPause() ? kPauseReading : 0;
}

/// Reads what the ring holds until `until_ns` or the reader pauses; a negative errno on failure.
int readRing(ring_buffer* ring, Reader& reader, int64_t until_ns) {
  reader.read_until_ns = until_ns;
  int n = ring_buffer__consume(ring);
  return n == kPauseReading || n == -EINTR ? 0 : n;
}

/// The sum over CPUs of entry `index` of a per-CPU array of counters.
uint64_t perCpuSum(int fd, uint32_t index) {
  if (fd < 0) return 0;
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return 0;
  std::vector<uint64_t> values(static_cast<size_t>(cpus), 0);
  if (bpf_map_lookup_elem(fd, &index, values.data()) != 0) return 0;
  uint64_t total = 0;
  for (uint64_t v : values) total += v;
  return total;
}

uint64_t lostEvents(int fd, Lost why) { return perCpuSum(fd, static_cast<uint32_t>(why)); }

/// What became of each join's events: its counters, and the entries still waiting.
std::vector<JoinResult> joinResults(const LoadedObject& object, const ProgramPlan& plan) {
  std::vector<JoinResult> results;
  int counts = plan.join_counts_map.empty() ? -1 : object.mapFd(plan.join_counts_map);
  for (const PlannedJoin& join : plan.joins) {
    JoinResult r;
    r.name = join.name;
    auto count = [&](JoinCount what) { return perCpuSum(counts, join.counters + static_cast<uint32_t>(what)); };
    r.kept = count(JoinCount::Kept) + count(JoinCount::Replaced);
    r.replaced = count(JoinCount::Replaced);
    r.matched = count(JoinCount::Matched);
    r.unmatched = count(JoinCount::Unmatched);
    r.expired = count(JoinCount::Expired);
    int fd = object.mapFd(join.map);
    if (fd >= 0) {
      std::vector<uint8_t> key(1024), next(1024);
      void* prev = nullptr;
      while (bpf_map_get_next_key(fd, prev, next.data()) == 0) {
        ++r.waiting;
        key.swap(next);
        prev = key.data();
      }
    }
    // Every new key kept leaves by a match, by being too old, or by eviction, or waits.
    uint64_t fresh = r.kept - r.replaced;
    uint64_t gone = r.matched + r.expired + r.waiting;
    r.evicted = fresh > gone ? fresh - gone : 0;
    results.push_back(std::move(r));
  }
  return results;
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

/// What the session sleeps on between reads: the ring buffer and, with -c or -p, the
/// process's exit (a pidfd), so that neither new events nor the end of the process waits
/// for a timeout.
class Wakeups {
 public:
  Wakeups(ring_buffer* ring, pid_t watched) : watched_(watched) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ring_event{EPOLLIN, {.u32 = 0}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, ring_buffer__epoll_fd(ring), &ring_event);
    pidfd_ = watched ? static_cast<int>(syscall(SYS_pidfd_open, watched, 0)) : -1;
    if (pidfd_ >= 0) {
      epoll_event exit_event{EPOLLIN, {.u32 = 1}};
      epoll_ctl(epoll_, EPOLL_CTL_ADD, pidfd_, &exit_event);
    }
  }
  ~Wakeups() {
    if (pidfd_ >= 0) close(pidfd_);
    close(epoll_);
  }

  /// Sleeps at most `timeout_ms`; false if waiting failed.
  bool wait(int timeout_ms, std::ostream& err) {
    if (watched_ && pidfd_ < 0) timeout_ms = std::min(timeout_ms, 50);  // no pidfd: poll
    epoll_event events[2];
    int n = epoll_wait(epoll_, events, 2, timeout_ms);
    if (n < 0 && errno != EINTR) {
      err << "kq: error: waiting for events failed: " << std::strerror(errno) << "\n";
      return false;
    }
    watched_ended_ = std::any_of(events, events + std::max(n, 0),
                                 [](const epoll_event& e) { return e.data.u32 == 1; });
    return true;
  }

  /// Whether the process of -p has ended (signalled by its pidfd, or polled without one).
  bool tracedEnded() const {
    return pidfd_ >= 0 ? watched_ended_ : kill(watched_, 0) != 0 && errno == ESRCH;
  }

 private:
  pid_t watched_;
  int epoll_ = -1;
  int pidfd_ = -1;
  bool watched_ended_ = false;
};

int msUntil(int64_t when) {
  int64_t left = when - nowNs(CLOCK_MONOTONIC);
  return static_cast<int>(std::clamp<int64_t>(left / 1'000'000 + 1, 0, 1000));
}

/// `every`: each aggregate query's next tick, just after the end of each interval of the
/// clock (the kernel counts each event in the interval its time falls in), so every table is
/// a whole interval.
std::vector<int64_t> firstTicks(const ProgramPlan& plan) {
  std::vector<int64_t> ticks;
  int64_t now = nowNs(CLOCK_MONOTONIC);
  for (const AggregateLayout& a : plan.layout.aggregates) {
    // An interval the clock cannot reach (2^64 - 1 ns) never ticks: its table prints at the end.
    bool ticks_ever = a.every_ns && a.every_ns < (1ull << 62);  // 146 years
    int64_t every = static_cast<int64_t>(a.every_ns);
    ticks.push_back(ticks_ever ? (now / every + 1) * every + kTickGraceNs : 0);
  }
  return ticks;
}

/// Counts what was lost and says on stderr how the session ended and what it saw.
void reportEnd(SessionResult& result, const LoadedObject& object, const ProgramPlan& plan,
               const SessionOptions& options, std::ostream& err) {
  int lost_fd = object.mapFd(plan.lost_map);
  for (uint32_t why = 0; why < kLostReasons; ++why) {
    result.lost[why] = lostEvents(lost_fd, static_cast<Lost>(why));
  }
  result.joins = joinResults(object, plan);
  if (result.traced_exited) err << "kq: process " << options.traced << " exited\n";
  if (!result.output_failure.empty()) {
    err << "kq: error: cannot write the output: " << result.output_failure << "\n";
  }
  err << sessionSummary(result, plan, options.format) << "\n";
}

}  // namespace

SessionResult runSession(LoadedObject& object, const ProgramPlan& plan,
                         const SessionOptions& options, std::ostream& out, std::ostream& err) {
  SessionResult result;
  refreshKernelSymbols();  // modules may have come and gone since the last session
  int64_t boot_offset = measureBootOffset();
  // Every field's type is found once, here, not as events arrive.
  TypeDumper types(options.kernel_types);
  types.prepare(plan.layout);
  auto formatter = makeFormatter(options.format, plan.layout, types, boot_offset, out);
  QueryEnds ends(options.queries, plan.layout, nowNs(CLOCK_MONOTONIC));
  Reader reader{plan, *formatter, ends, out, options.events_printed};
  Tables tables(object, plan, options, ends, types, out);
  ring_buffer* ring = ring_buffer__new(object.mapFd(plan.events_map), onEvent, &reader, nullptr);
  if (!ring) {
    err << "kq: error: cannot read the event ring buffer: " << std::strerror(errno) << "\n";
    return result;
  }
  formatter->begin();
  out.flush();
  // A query that ended: its programs detached, its tables printed as at the end.
  auto endQuery = [&](uint32_t query) {
    object.detach(query);
    tables.printFinal(query);
  };
  // Reads for at most a slice, and never past `limit` (a deadline) if there is one.
  auto readSlice = [&](int64_t limit) {
    int64_t until = nowNs(CLOCK_MONOTONIC) + kReadSliceNs;
    return readRing(ring, reader, limit ? std::min(until, limit) : until);
  };

  int64_t deadline = deadlineAfter(nowNs(CLOCK_MONOTONIC), options.duration_ns);
  Wakeups wakeups(ring, options.child ? options.child->pid() : options.traced);
  const auto& aggregates = plan.layout.aggregates;
  std::vector<int64_t> ticks = firstTicks(plan);
  while (!stopRequested() && !ends.allEnded()) {
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
        readSlice(0);  // the events before its `for` ran out are still shown
        for (uint32_t query : ends.expire(nowNs(CLOCK_MONOTONIC))) endQuery(query);
        continue;
      }
      timeout_ms = std::min(timeout_ms, msUntil(*next));
    }
    if (deadline) {
      if (nowNs(CLOCK_MONOTONIC) >= deadline) break;
      timeout_ms = std::min(timeout_ms, msUntil(deadline));
    }
    if (!wakeups.wait(timeout_ms, err)) break;
    int read = readSlice(deadline);
    if (read < 0) {
      err << "kq: error: reading events failed: " << std::strerror(-read) << "\n";
      break;
    }
    for (uint32_t query : reader.reached_limit) endQuery(query);
    reader.reached_limit.clear();
    out.flush();
    if (out.bad()) break;
    if (options.child ? options.child->exited() : options.traced && wakeups.tracedEnded()) {
      result.traced_exited = !options.child;
      break;
    }
  }
  // Events already in the buffer when the session ends are still shown, then the tables.
  if (!out.bad()) {
    reader.final_read = true;
    reader.records_left = kFinalRecords;
    readRing(ring, reader, nowNs(CLOCK_MONOTONIC) + kFinalReadNs);
  }
  formatter->end();
  tables.printFinal(std::nullopt);
  out.flush();
  ring_buffer__free(ring);
  result.output_failure = outputFailure(out);

  result.events = reader.events;
  reportEnd(result, object, plan, options, err);
  return result;
}

}  // namespace kq::runtime
