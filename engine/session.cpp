#include "engine/session.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>

#include <fmt/format.h>

#include "engine/ring_pace.h"
#include "engine/table.h"
#include "runtime/query_ends.h"
#include "runtime/type_dump.h"

namespace kq::engine {

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

struct Reader {
  RecordDecoder& decoder;
  Sink& sink;
  runtime::QueryEnds& ends;
  const Cancellation& cancellation;
  std::vector<uint64_t>& query_events;  // the reader's own count; published after each read
  std::atomic<uint64_t>* shared_events;  // may be null
  uint64_t events = 0;
  uint64_t consumed = 0;                // records read from the ring, shown or not
  std::vector<uint32_t> reached_limit;  // queries to detach once the read is over
  int64_t read_until_ns = 0;            // this read's end (CLOCK_MONOTONIC)
  uint64_t records_left = UINT64_MAX;   // this read's budget of records
  bool final_read = false;              // the last read: a stop request does not cut it
  /// Past the last read: what is left is counted by query, not shown.
  std::vector<uint64_t>* not_shown = nullptr;

  /// Records since the clock was last read: it is read every kClockEvery records (a
  /// clock_gettime for each was 5% of a recorder's CPU in a flood).
  uint32_t unclocked = 0;
  static constexpr uint32_t kClockEvery = 64;

  bool shouldPause() {
    if (!final_read && cancellation.cancelled()) return true;
    if (records_left == 0 || sink.failed()) return true;
    if (++unclocked < kClockEvery) return false;
    unclocked = 0;
    return nowNs() >= read_until_ns;
  }
};

int onRecord(void* ctx, void* data, size_t size) {
  auto* r = static_cast<Reader*>(ctx);
  ++r->consumed;
  if (r->not_shown) {
    plan::EventHeader header;
    if (size < sizeof header) return 0;
    std::memcpy(&header, data, sizeof header);
    const auto& probes = r->decoder.layout().probes;
    if (header.probe_id >= probes.size()) return 0;
    uint32_t query = probes[header.probe_id].query;
    if (query < r->not_shown->size() && !r->ends.ended(query)) ++(*r->not_shown)[query];
    return 0;
  }
  const DecodedEvent* event = r->decoder.decode(static_cast<const uint8_t*>(data), size);
  if (!event) return 0;
  uint32_t query = event->probe->query;
  if (r->ends.ended(query)) return 0;
  r->sink.onEvent(*event);
  ++r->events;
  if (query < r->query_events.size()) ++r->query_events[query];
  if (r->shared_events) r->shared_events->store(r->events, std::memory_order_relaxed);
  if (r->ends.printed(query)) r->reached_limit.push_back(query);
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

/// What became of each join's events: its counters, and the entries still waiting.
std::vector<JoinResult> joinResults(const runtime::LoadedObject& object, const plan::ProgramPlan& plan) {
  std::vector<JoinResult> results;
  int counts = plan.join_counts_map.empty() ? -1 : object.mapFd(plan.join_counts_map);
  for (const plan::PlannedJoin& join : plan.joins) {
    JoinResult r;
    r.name = join.name;
    r.query = join.query;
    auto count = [&](plan::JoinCount what) {
      return perCpuSum(counts, join.counters + static_cast<uint32_t>(what));
    };
    r.kept = count(plan::JoinCount::Kept) + count(plan::JoinCount::Replaced);
    r.replaced = count(plan::JoinCount::Replaced);
    r.matched = count(plan::JoinCount::Matched);
    r.unmatched = count(plan::JoinCount::Unmatched);
    r.expired = count(plan::JoinCount::Expired);
    int fd = object.mapFd(join.map);
    bpf_map_info info{};
    uint32_t info_size = sizeof info;
    if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &info_size) == 0) {
      // Keys as large as the map's own (not as the plan says).
      std::vector<uint8_t> key(info.key_size), next(info.key_size);
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

/// Shows the tables of one query's aggregates (or of all, with `query` empty) as at the
/// end of the session, once each.
class Tables {
 public:
  Tables(const runtime::LoadedObject& object, const plan::ProgramPlan& plan,
         const runtime::QueryEnds& ends, RecordDecoder& decoder, Sink& sink)
      : object_(object), plan_(plan), ends_(ends), decoder_(decoder), sink_(sink),
        shown_(plan.layout.aggregates.size(), false), ticked_(plan.layout.aggregates.size(), false) {}

  void showFinal(std::optional<uint32_t> query) {
    const auto& aggregates = plan_.layout.aggregates;
    for (size_t i = 0; i < aggregates.size(); ++i) {
      const plan::AggregateLayout& a = aggregates[i];
      if (shown_[i] || (query && a.query != *query)) continue;
      shown_[i] = true;
      // With `every`, what is left since the last tick, if anything (a session shorter
      // than one interval shows its table even empty); otherwise the whole table.
      show(a, TableRead::Snapshot, /*skip_empty=*/a.every_ns != 0 && ticked_[i]);
    }
  }

  /// A tick of aggregate `i` shows its ended intervals.
  void tick(size_t i) {
    ticked_[i] = true;
    show(plan_.layout.aggregates[i], TableRead::Drain, /*skip_empty=*/false);
  }

  void show(const plan::AggregateLayout& a, TableRead read, bool skip_empty) {
    int fd = object_.mapFd(a.map);
    if (fd < 0) return;
    BpfTableSource source(fd);
    Table table = readTable(source, a, read, decoder_, nowNs(CLOCK_MONOTONIC), nowNs(CLOCK_REALTIME),
                            ends_.tableRows(a.query));
    if (skip_empty && table.rows.empty() && !table.left_out) return;
    sink_.onTable(table);
  }

 private:
  const runtime::LoadedObject& object_;
  const plan::ProgramPlan& plan_;
  const runtime::QueryEnds& ends_;
  RecordDecoder& decoder_;
  Sink& sink_;
  std::vector<bool> shown_;
  std::vector<bool> ticked_;
};

/// What the session sleeps on between reads: the ring buffer, its cancellation, its
/// handles' requests and, with -c or -p, the process's exit (a pidfd), so that none of them
/// waits for a timeout.
class Wakeups {
 public:
  enum : uint32_t { kRing, kExit, kCancel, kControl };

  Wakeups(ring_buffer* ring, pid_t watched, int cancel_fd, int control_fd) : watched_(watched) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    add(ring_buffer__epoll_fd(ring), kRing);
    if (cancel_fd >= 0) add(cancel_fd, kCancel);
    if (control_fd >= 0) add(control_fd, kControl);
    pidfd_ = watched ? static_cast<int>(syscall(SYS_pidfd_open, watched, 0)) : -1;
    if (pidfd_ >= 0) add(pidfd_, kExit);
    control_fd_ = control_fd;
  }
  ~Wakeups() {
    if (pidfd_ >= 0) close(pidfd_);
    close(epoll_);
  }

  /// Sleeps at most `timeout_ms`; false if waiting failed (`error` says why).
  bool wait(int timeout_ms, std::string& error) {
    if (watched_ && pidfd_ < 0) timeout_ms = std::min(timeout_ms, 50);  // no pidfd: poll
    epoll_event events[4];
    int n = epoll_wait(epoll_, events, 4, timeout_ms);
    if (n < 0 && errno != EINTR) {
      error = fmt::format("waiting for events failed: {}", std::strerror(errno));
      return false;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u32 == kExit) watched_ended_ = true;
      if (events[i].data.u32 == kControl) {
        uint64_t count;
        (void)!read(control_fd_, &count, sizeof count);
      }
    }
    return true;
  }

  /// Whether the process of -p has ended (signalled by its pidfd, or polled without one).
  bool tracedEnded() const {
    return pidfd_ >= 0 ? watched_ended_ : kill(watched_, 0) != 0 && errno == ESRCH;
  }

 private:
  void add(int fd, uint32_t what) {
    epoll_event event{EPOLLIN, {.u32 = what}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
  }

  pid_t watched_;
  int epoll_ = -1;
  int pidfd_ = -1;
  int control_fd_ = -1;
  bool watched_ended_ = false;
};

int msUntil(int64_t when) {
  int64_t left = when - nowNs();
  return static_cast<int>(std::clamp<int64_t>(left / 1'000'000 + 1, 0, 1000));
}

/// `every`: each aggregate query's next tick, just after the end of each interval of the
/// clock (the kernel counts each event in the interval its time falls in), so every table is
/// a whole interval.
std::vector<int64_t> firstTicks(const plan::ProgramPlan& plan) {
  std::vector<int64_t> ticks;
  int64_t now = nowNs();
  for (const plan::AggregateLayout& a : plan.layout.aggregates) {
    // An interval the clock cannot reach (2^64 - 1 ns) never ticks: its table prints at the end.
    bool ticks_ever = a.every_ns && a.every_ns < (1ull << 62);  // 146 years
    int64_t every = static_cast<int64_t>(a.every_ns);
    ticks.push_back(ticks_ever ? (now / every + 1) * every + kTickGraceNs : 0);
  }
  return ticks;
}

}  // namespace

void QueryHandle::stop() {
  session_->states_[query_].stop.store(true);
  session_->wake();
}

QueryStats QueryHandle::stats() const {
  QueryStats s;
  const Session::QueryState& state = session_->states_[query_];
  s.events = s.printed = state.events.load(std::memory_order_relaxed);
  s.ended = state.ended.load();
  s.lost = session_->lostOf(query_);
  return s;
}

Session::Session(Host& host, runtime::LoadedObject& object, const plan::ProgramPlan& plan,
                 PrintContext& context, Sink& sink, const Cancellation& cancellation,
                 SessionOptions options)
    : host_(host), object_(object), plan_(plan), context_(context), sink_(sink),
      cancellation_(cancellation), options_(std::move(options)) {
  for (uint32_t q = 0; q < std::max<uint32_t>(plan.layout.queries, 1); ++q) {
    states_.emplace_back();
    handles_.push_back(QueryHandle(*this, q));
  }
  control_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Session::~Session() {
  if (control_fd_ >= 0) close(control_fd_);
}

void Session::wake() {
  uint64_t one = 1;
  if (control_fd_ >= 0) (void)!write(control_fd_, &one, sizeof one);
}

std::array<uint64_t, plan::kLostReasons> Session::lostOf(uint32_t q) const {
  std::array<uint64_t, plan::kLostReasons> lost{};
  // Each query has its own counters (checked for `kq run` by runtime/object_check.cpp).
  int fd = object_.mapFd(plan_.lost_map);
  for (uint32_t why = 0; why < plan::kLostReasons; ++why) {
    lost[why] = perCpuSum(fd, q * plan::kLostReasons + why);
  }
  return lost;
}

std::vector<std::pair<std::string, uint64_t>> Session::lostAt(uint32_t q) const {
  std::map<std::string, uint64_t> by_site;
  for (const plan::ProbeLayout& probe : plan_.layout.probes) {
    if (probe.query != q || !probe.packet || probe.packet->lost_map.empty()) continue;
    int fd = object_.mapFd(probe.packet->lost_map);
    for (uint32_t i = 0; i < probe.packet->sites.size(); ++i) {
      if (uint64_t n = perCpuSum(fd, i)) by_site[probe.packet->sites[i]] += n;
    }
  }
  std::vector<std::pair<std::string, uint64_t>> out(by_site.begin(), by_site.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

SessionResult Session::run() {
  SessionResult result;
  RecordDecoder decoder(plan_.layout, context_);
  runtime::QueryEnds ends(options_.queries, plan_.layout, nowNs());
  std::vector<uint64_t> query_events(states_.size(), 0);
  Reader reader{decoder, sink_, ends, cancellation_, query_events, options_.events_printed};
  Tables tables(object_, plan_, ends, decoder, sink_);
  ring_buffer* ring = ring_buffer__new(object_.mapFd(plan_.events_map), onRecord, &reader, nullptr);
  if (!ring) {
    sink_.onError(fmt::format("cannot read the event ring buffer: {}", std::strerror(errno)));
    return result;
  }
  sink_.onBegin();
  sink_.flush();
  // `trace begin`: once every probe is attached (kq run has run it already where a command
  // waits for it: its records are in the ring).
  if (auto failed = object_.runOnce(plan::Attach::Begin)) sink_.onError(*failed);
  // `iter:`: each object an event, now.
  if (auto failed = object_.runOnce(plan::Attach::Iter)) sink_.onError(*failed);
  // A query that ended: its programs detached, its tables shown as at the end.
  auto endQuery = [&](uint32_t query) {
    object_.detach(query);
    tables.showFinal(query);
    if (query < states_.size()) {
      states_[query].events.store(query_events[query]);
      states_[query].ended = true;
      sink_.onQueryEnd(query, handles_[query].stats());
    }
  };
  // Reads for at most a slice, and never past `limit` (a deadline) if there is one.
  auto readSlice = [&](int64_t limit) {
    int64_t until = nowNs() + kReadSliceNs;
    int n = readRing(ring, reader, limit ? std::min(until, limit) : until);
    for (size_t q = 0; q < states_.size(); ++q) states_[q].events.store(query_events[q]);
    return n;
  };
  auto sinkFailed = [&] { return sink_.failed() || !sink_.failure().empty(); };

  int64_t deadline = runtime::deadlineAfter(nowNs(), options_.duration_ns);
  Wakeups wakeups(ring, options_.child ? options_.child->pid() : options_.traced,
                  cancellation_.fd(), control_fd_);
  RingPace pace(plan_.pace_map.empty() ? -1 : object_.mapFd(plan_.pace_map), object_.mapFd(plan_.events_map));
  const auto& aggregates = plan_.layout.aggregates;
  std::vector<int64_t> ticks = firstTicks(plan_);
  // Only `begin` and iterators: nothing else can happen, unless a command is waited for.
  bool nothing_to_wait_for = object_.onlyRunsAtStart() && !options_.child && !options_.traced && !options_.duration_ns;
  while (!nothing_to_wait_for && !cancellation_.cancelled() && !ends.allEnded()) {
    for (uint32_t q = 0; q < states_.size(); ++q) {
      if (states_[q].stop && !ends.ended(q)) {
        ends.end(q);
        endQuery(q);
      }
    }
    if (ends.allEnded()) break;
    int timeout_ms = 1000;
    for (size_t i = 0; i < ticks.size(); ++i) {
      if (!ticks[i] || ends.ended(aggregates[i].query)) continue;
      if (nowNs() >= ticks[i]) {
        tables.tick(i);
        ticks[i] += static_cast<int64_t>(aggregates[i].every_ns);
      }
      timeout_ms = std::min(timeout_ms, msUntil(ticks[i]));
    }
    if (auto next = ends.nextDeadline()) {
      if (nowNs() >= *next) {
        readSlice(0);  // the events before its `for` ran out are still shown
        for (uint32_t query : ends.expire(nowNs())) endQuery(query);
        continue;
      }
      timeout_ms = std::min(timeout_ms, msUntil(*next));
    }
    if (deadline) {
      if (nowNs() >= deadline) break;
      timeout_ms = std::min(timeout_ms, msUntil(deadline));
    }
    std::string error;
    if (!wakeups.wait(pace.timeoutMs(timeout_ms), error)) {
      sink_.onError(error);
      break;
    }
    uint64_t consumed = reader.consumed;
    int read = readSlice(deadline);
    pace.afterRead(reader.consumed - consumed);
    if (read < 0) {
      sink_.onError(fmt::format("reading events failed: {}", std::strerror(-read)));
      break;
    }
    for (uint32_t query : reader.reached_limit) endQuery(query);
    reader.reached_limit.clear();
    sink_.flush();
    if (sinkFailed()) break;
    if (options_.child ? options_.child->exited() : options_.traced && wakeups.tracedEnded()) {
      result.traced_exited = !options_.child;
      break;
    }
  }
  // Nothing more is produced (or counted) once the programs are detached: what the ring
  // holds then, and the tables, are all there is. Events already in the buffer are still
  // shown (within a budget: a flood must not keep kq from ending), the rest counted.
  // `trace end` first, while the maps are whole and its records still fit.
  if (!sinkFailed()) {
    if (auto failed = object_.runOnce(plan::Attach::End)) sink_.onError(*failed);
  }
  object_.detachAll();
  if (!sinkFailed()) {
    reader.final_read = true;
    reader.records_left = options_.drain_at_end ? UINT64_MAX : kFinalRecords;
    readRing(ring, reader, options_.drain_at_end ? INT64_MAX : nowNs() + kFinalReadNs);
    for (size_t q = 0; q < states_.size(); ++q) states_[q].events.store(query_events[q]);
  }
  std::vector<uint64_t> not_shown(states_.size(), 0);
  reader.not_shown = &not_shown;
  ring_buffer__consume(ring);
  sink_.onEnd();
  tables.showFinal(std::nullopt);
  sink_.flush();
  result.output_failure = sink_.failure();
  result.reader_gone = sink_.readerGone();

  result.events = reader.events;
  result.traced_pid = static_cast<uint32_t>(options_.traced);
  for (uint32_t q = 0; q < states_.size(); ++q) {
    QueryStats stats = handles_[q].stats();
    stats.lost_at = lostAt(q);
    if (!states_[q].ended.exchange(true)) sink_.onQueryEnd(q, stats);  // ended with the session
    stats.ended = true;
    for (uint32_t why = 0; why < plan::kLostReasons; ++why) result.lost[why] += stats.lost[why];
    bool lost_any = std::any_of(stats.lost.begin(), stats.lost.end(), [](uint64_t n) { return n != 0; });
    if (lost_any) sink_.onLoss(q, stats);
    result.queries.push_back(stats);
  }
  for (uint32_t q = 0; q < not_shown.size() && q < result.queries.size(); ++q) {
    result.queries[q].not_shown = not_shown[q];
    result.not_shown += not_shown[q];
  }
  ring_buffer__free(ring);
  result.joins = joinResults(object_, plan_);
  sink_.onSummary(result);
  return result;
}

}  // namespace kq::engine
