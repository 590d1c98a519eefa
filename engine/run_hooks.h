// What a run of a query tells whoever watches it (the REPL's jobs, through fork isolation).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace kq::engine {

struct RunHooks {
  /// Called once the programs are attached, before the first event is read.
  std::function<void()> attached;
  /// Counts the events printed so far.
  std::atomic<uint64_t>* events = nullptr;
};

}  // namespace kq::engine
