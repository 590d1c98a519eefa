// The interactive session's running queries: at most one in the foreground (the prompt waits
// for it; Ctrl-C stops it), any number in the background (`QUERY &`, numbered from 1, their
// output lines prefixed with `[N] `). Each runs in a process of its own, with the engine's
// fork isolation (engine/forked_run.h). A job on a place another job attached to takes a
// slot of that job's site instead of attaching (site_keeper.h).
#pragma once

#include <poll.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/forked_run.h"
#include "repl/site_keeper.h"

namespace kq::repl {

/// A piece of a job's output: what it wrote on standard output or on standard error.
struct OutputChunk {
  bool error = false;
  std::string text;
};

/// Where the jobs' output goes: plain streams, or the terminal above the line being edited.
class JobOutput {
 public:
  virtual ~JobOutput() = default;
  virtual void write(const std::vector<OutputChunk>& chunks) = 0;
};

/// Writes chunks to two streams as they come.
class StreamOutput : public JobOutput {
 public:
  StreamOutput(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}
  void write(const std::vector<OutputChunk>& chunks) override;

 private:
  std::ostream& out_;
  std::ostream& err_;
};

class JobTable {
 public:
  /// Starts `body` in the foreground (the prompt waits) or in the background; returns the
  /// job's number (0 for the foreground), or an error saying why it could not start.
  /// `aggregates`: the query prints tables, not events (`jobs` has no events to count).
  Result<int> start(const std::string& query, const engine::ForkedRun::Body& body, bool background,
                    bool aggregates);

  /// The descriptors to poll for the jobs' output, ends and attachments.
  std::vector<pollfd> pollFds() const;
  /// Passes on what the jobs wrote, says which background jobs started or ended, and
  /// forgets the jobs that ended. Returns the exit status of the foreground job (or the
  /// background job still starting) if it ended.
  std::optional<int> collect(JobOutput& output);

  bool hasForeground() const;
  /// Whether the background job just started is still loading (the prompt waits for it to
  /// attach, so that its errors come before the prompt).
  bool hasStarting() const;
  /// Ctrl-C: stops the foreground job (or the background job still starting).
  void interruptForeground();
  /// `stop N`: detaches a background job; false if there is none with that number.
  bool stop(int number);
  /// Detaches every job (quit, a hang-up); collect() until empty() to see them end.
  void stopAll();
  /// Ends every job at once (SIGKILL: the kernel detaches their programs as they go).
  void killAll();
  bool empty() const { return entries_.empty(); }
  /// `jobs`: each background job with its events so far and its query.
  void list(std::ostream& out) const;
  /// The places jobs share now (a site each).
  size_t sites() const { return sites_.sites(); }

 private:
  struct Entry {
    int number = 0;  // 0: the foreground
    std::string query;
    bool aggregates = false;
    std::unique_ptr<engine::ForkedRun> job;
    uint64_t id = 0;       // the job, to the keeper of sites
    int channel = -1;      // the keeper's end of the job's channel
    bool announced = false;  // `[N] query` printed once attached
    bool stopped = false;    // by `stop N` or quit, not by its own `for` or `limit`
    std::string out_line, err_line;  // a background job's unfinished lines
  };
  void passOn(Entry& entry, std::string& out, std::string& err, bool flush,
              std::vector<OutputChunk>& chunks);

  SiteKeeper sites_;  // before entries_: a job's slots are said to it until the job goes
  std::vector<Entry> entries_;
  int next_number_ = 1;
  uint64_t next_id_ = 1;
};

}  // namespace kq::repl
