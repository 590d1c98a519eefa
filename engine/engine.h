// The engine every front end runs queries on (the command line, the REPL, `kq run`, later
// `kq serve` and replay): load a compiled program on a Host, then run it as a Session that
// hands typed results to a Sink, with one handle per query (stop(), stats()) and a
// Cancellation that stops it all. See docs/hacking.md, "The engine".
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/cancellation.h"
#include "engine/host.h"
#include "engine/session.h"
#include "engine/sink.h"
#include "plan/program_plan.h"
#include "runtime/kernel_types.h"
#include "runtime/loader.h"

namespace kq::engine {

class Engine {
 public:
  explicit Engine(Host& host) : host_(host) {}

  /// Loads `elf` and attaches its programs as `plan` says, with the kernel features of the
  /// Host (unless `options.features` names others).
  runtime::LoadResult load(const std::vector<char>& elf, const plan::ProgramPlan& plan,
                           runtime::LoadOptions options = {});

  /// Runs a loaded program until its session ends. `types` are the kernel's types for dumps
  /// and enumerators (may be null); `make_sink` makes the sink once the print context exists;
  /// `started`, if given, is called with the session before it runs (its query handles may
  /// be used from another thread while it does).
  SessionResult run(runtime::LoadedObject& object, const plan::ProgramPlan& plan,
                    runtime::KernelTypes* types,
                    const std::function<std::unique_ptr<Sink>(PrintContext&)>& make_sink,
                    const Cancellation& cancellation, SessionOptions options,
                    const std::function<void(Session&)>& started = {});

  Host& host() { return host_; }

 private:
  Host& host_;
};

}  // namespace kq::engine
