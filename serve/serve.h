// `kq serve`: kq's scripts as always-on metrics for Prometheus. Every `.kq` script of the
// given directories (and files) is checked, compiled, loaded and attached, then runs until
// kq is stopped; `/metrics` reads each script's tables as they stand (cumulative from its
// start: nothing is reset by a scrape). Scripts come and go while it runs: the directories
// are read again every kRescanMs and on SIGHUP, and a script whose text changed replaces
// its own queries only. A script that fails to check, load or attach is logged, shown as
// `kq_script_up{script="..."} 0` with its error, and the others keep running. Queries that
// select events write them as JSON lines (event_log.h).
// See docs/serve.md.
#pragma once

#include <string>
#include <vector>

#include "driver/io.h"

namespace kq::serve {

struct ServeOptions {
  std::vector<std::string> paths;  // directories of .kq scripts, or scripts
  std::string listen = "127.0.0.1:9435";
  bool check_only = false;  // --check: say what would not serve, run nothing
  /// --events FILE: the event queries' JSON lines (empty: standard output), rotated at
  /// --events-max-bytes.
  std::string events;
  uint64_t events_max_bytes = 64ull << 20;
  /// --remote-write URL: also push the metrics there every remote_write_ms.
  std::string remote_write;
  uint64_t remote_write_ms = 15000;
  std::string instance;  // the `instance` label pushed (default: the host's name)
};

/// Returns the exit status: 0 once stopped by SIGINT or SIGTERM; 1 when it cannot start
/// (or, with --check, when a script would not serve); 2 for a bad command line.
int runServe(const ServeOptions& options, driver::Io& io);

}  // namespace kq::serve
