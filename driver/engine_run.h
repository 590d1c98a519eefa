// What a command needs from the engine to run a loaded program: a Host and a Cancellation
// (the caller's, from Io, or its own for as long as the command runs, with the stop signals
// caught), and a session printed as the command line asked (-o text|json).
#pragma once

#include <memory>
#include <optional>

#include "driver/io.h"
#include "driver/request.h"
#include "engine/cancellation.h"
#include "engine/engine.h"
#include "engine/event_lines.h"
#include "engine/host.h"
#include "plan/portable_plan.h"

namespace kq::driver {

class RunEnvironment {
 public:
  explicit RunEnvironment(Io& io);
  ~RunEnvironment();
  engine::Host& host() { return *host_; }
  engine::Cancellation& stop() { return *stop_; }

 private:
  Io& io_;
  std::unique_ptr<engine::Host> own_host_;
  engine::Host* host_;
  std::unique_ptr<engine::Cancellation> own_stop_;
  std::optional<engine::SignalStop> signals_;
  engine::Cancellation* stop_;
};

/// The text sink's options the command line asked for.
engine::TextOptions textOptions(const Request& request);

/// `--dry-run`: how each probe of `object` (loaded and attached) attached, on io.out, and exit
/// status 0; the caller detaches it as it returns.
int dryRunReport(const runtime::LoadedObject& object, const plan::ProgramPlan& plan, Io& io);

/// Runs `object` until its session ends, its events and tables on io.out as `request.format`
/// says, its summary on io.err; with `request.record_path` (`kq record`), also into that
/// recording (`sources`: each query's text, for it to say).
engine::SessionResult runSession(engine::Engine& engine, runtime::LoadedObject& object,
                                 const plan::ProgramPlan& plan, runtime::KernelTypes* types,
                                 const Request& request, engine::SessionOptions options,
                                 engine::Cancellation& stop, Io& io,
                                 const std::vector<plan::QuerySource>& sources = {});

}  // namespace kq::driver
