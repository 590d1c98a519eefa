// One script `kq serve` runs (a `.kq` file, or an object `kq build` wrote): checked (an
// object: its plan read and checked), compiled, loaded and attached, then its session on a
// thread of its own until it is stopped. Scrapes read its tables and counters from another
// thread (families(), selfSamples()), each with a decoder context of its own.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/source.h"
#include "compiler/sema/sema.h"
#include "driver/environment.h"
#include "engine/cancellation.h"
#include "engine/engine.h"
#include "plan/portable_plan.h"
#include "runtime/kernel_types.h"
#include "runtime/loader.h"
#include "runtime/type_dump.h"
#include "serve/event_log.h"
#include "serve/exposition.h"

namespace kq::serve {

/// Whether `name` is a file kq serve runs: a `.kq` script or an object (`.o`).
bool isServable(const std::string& name);

/// What a script needs of the server: the kernel `.kq` scripts are checked and compiled
/// against, the loads' kernel features, and where its log lines and events go.
struct ScriptContext {
  driver::KernelEnvironment& env;
  engine::Host& host;
  std::ostream& log;
  EventLog& events;
  std::string hostname;
  /// The places scripts share: a script on a place another script attached to takes a slot
  /// of its site and attaches nothing (plan/live_site.h).
  runtime::LiveSites* sites = nullptr;
};

/// kq's own families, each script adding its samples (Script::selfSamples, families).
struct SelfFamilies {
  SelfFamilies();
  Family up, errors, attached, lost, events, run_ns, runs, series, limit;
};

class Script {
 public:
  Script(std::string path, std::string text);
  ~Script();  // stops it
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }  // its part of its families' names
  const std::string& text() const { return text_; }  // the file's bytes, to see it change
  /// Why it does not run (a rendered diagnostic, or a line); empty while it does.
  const std::string& error() const { return error_; }
  void fail(std::string error) { error_ = std::move(error); }
  bool up() const { return error_.empty() && object_ != nullptr; }

  /// Parses and checks it as kq serve runs it (an object: reads it and checks its plan);
  /// false with error() set.
  bool check(const ScriptContext& ctx);
  /// Checks, compiles (or reads), loads and attaches it, then starts its session.
  void start(const ScriptContext& ctx);
  /// Asks its session to end, without waiting.
  void cancel() { stop_.cancel(); }
  /// Ends its session (its programs detach) and waits for it.
  void stop();

  /// Its tables' families as they stand, read on the scrape's thread with `scrape_host`'s
  /// symbols; each table's groups and limit into `self`.
  void families(engine::Host& scrape_host, std::vector<Family>& out, SelfFamilies& self);
  /// Its samples of kq's own families: up, error, programs, losses, events, run time.
  void selfSamples(SelfFamilies& self);

 private:
  friend class ServeSink;
  bool readObject();

  std::string path_, name_, text_;
  bool is_object_ = false;
  std::string hostname_;

  // A `.kq` file's, while it is checked and compiled.
  SourceManager sources_;
  FileId file_ = 0;
  std::optional<ast::Script> ast_;
  std::optional<sema::CheckedProgram> checked_;
  std::vector<char> elf_;  // an object's bytes, read by check()

  // What runs: compiled here, or read from the object.
  plan::PortablePlan portable_;
  std::vector<bool> aggregates_;                 // by query: whether scrapes read it
  std::unique_ptr<runtime::KernelTypes> types_;  // the events' dumps
  std::unique_ptr<runtime::LoadedObject> object_;
  std::string error_;

  // Its session, in a thread of its own, on a Host of its own (Hosts are not shared
  // between threads).
  std::unique_ptr<engine::Host> host_;
  engine::Cancellation stop_;
  std::thread thread_;
  std::mutex mutex_;  // guards `session_` (scrapes read its query handles)
  engine::Session* session_ = nullptr;
  // The scrape's: its own decoder context, off the session's thread.
  std::unique_ptr<runtime::TypeDumper> dumper_;
};

}  // namespace kq::serve
