// What a run of a query tells whoever watches it (the REPL's jobs, through fork isolation).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "runtime/live_sites.h"

namespace kq::engine {

struct RunHooks {
  /// Called once the programs are attached, before the first event is read.
  std::function<void()> attached;
  /// Counts the events printed so far.
  std::atomic<uint64_t>* events = nullptr;
  /// The front end's live sites (the REPL's): the query is compiled as slots of them, and
  /// takes a slot where another job already attached to its place.
  runtime::LiveSites* sites = nullptr;
};

}  // namespace kq::engine
