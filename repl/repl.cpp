// `kq` at a terminal: an interactive session. Each input is a query (run in the foreground
// until Ctrl-C, `for` or `limit`, or in the background with a trailing `&`), a declaration
// kept for the inputs that follow (`let`, `fn`, `use`), or a command (`info`, `list`,
// `check`, `jobs`, `stop`, `help`, `quit`). Queries are checked here and run in processes of
// their own (job.h), so that nothing that goes wrong in one can end the session.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>

#include "repl/repl.h"
#include "driver/commands.h"
#include "driver/compile.h"
#include "driver/run.h"
#include "repl/input_tokens.h"
#include "repl/job_table.h"
#include "repl/line_editor.h"
#include "repl/session_signals.h"
#include "repl/warm_up.h"
#include "engine/host.h"

namespace kq::repl {
namespace {

constexpr const char* kHelp = R"(Type a query to run it; Ctrl-C stops it and comes back here:
  trace syscall:openat select comm, str(filename)
  trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 for 5s
End it with & to run it in the background while you go on typing:
  trace tracepoint:sched:sched_process_exec select comm &
Declarations (and `config` settings) are kept for the queries after them:
  let big = 4k
  fn ms(ns) = ns / 1000000
  use net
Commands:
  check QUERY     check a query without running it
  info WHAT       a function's prototype, a struct's layout, a tracepoint's fields
  list PATTERN    matching functions, tracepoints (tracepoint:net:*), syscalls, packet
  decls           the declarations kept so far
  jobs            the queries running in the background, with their events so far
  stop N          stop background query N
  help
  quit, exit      end the session (so does Ctrl-D; queries still running are stopped)
Tab completes functions, tracepoints, arguments and struct members (skb->dev-><Tab>);
the up arrow recalls earlier inputs; a line ending with \ (or inside an unfinished query)
goes on on the next.
)";

constexpr int kPollMs = 250;  // also how soon a job whose streams outlive it is seen to end
/// How long the session waits, when it ends, for its queries to detach and say what they saw
/// before it ends them at once.
constexpr auto kStopGrace = std::chrono::seconds(5);

bool startsWith(const std::string& line, const char* word) {
  size_t n = std::strlen(word);
  return line.compare(0, n, word) == 0 &&
         (line.size() == n || line[n] == ' ' || line[n] == '\t');
}

/// The rest of `line` after its first word, without leading blanks.
std::string argument(const std::string& line) {
  size_t space = line.find_first_of(" \t");
  if (space == std::string::npos) return "";
  size_t start = line.find_first_not_of(" \t", space);
  return start == std::string::npos ? "" : line.substr(start);
}

/// Where the history is kept: $XDG_STATE_HOME/kq/history, else ~/.local/state/kq/history.
std::string historyFile() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state && *state == '/') return std::string(state) + "/kq/history";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.local/state/kq/history";
  return "";
}

class Repl {
 public:
  Repl(const driver::Request& request, driver::Io& io, driver::KernelEnvironment& env, std::string& decls,
       LineInput& input)
      : request_(request), io_(io), env_(env), decls_(decls), input_(input),
        streams_(io.out, io.err) {}

  int run();

 private:
  void readInput(bool& reading);
  void handle(const std::string& input);
  void handleCommand(const std::string& line);
  void runText(std::string text, bool background);
  void onSignal(int sig, bool& reading);

  const driver::Request& request_;
  driver::Io& io_;
  driver::KernelEnvironment& env_;
  std::string& decls_;  // `let`, `fn` and `use` lines so far
  LineInput& input_;
  StreamOutput streams_;
  JobTable jobs_;
  std::string pending_;      // an unfinished input's lines so far
  std::string remembered_;   // the same on one line, as the history keeps it
  bool quit_ = false;
  bool hurry_ = false;
  int status_ = 0;
};

int Repl::run() {
  SessionSignals signals;
  bool reading = false;
  bool ending = false;
  std::chrono::steady_clock::time_point kill_at;
  for (;;) {
    if (quit_ && !ending) {
      jobs_.stopAll();  // each detaches and says what it saw
      ending = true;
      kill_at = std::chrono::steady_clock::now() + kStopGrace;
    }
    if (ending && jobs_.empty()) break;
    if (ending && (std::chrono::steady_clock::now() > kill_at || hurry_)) jobs_.killAll();
    bool waiting = jobs_.hasForeground() || jobs_.hasStarting();
    if (!reading && !waiting && !ending) {
      input_.start(pending_.empty() ? "kq> " : "..> ", pending_);
      reading = true;
    }
    if (reading && input_.hasLine()) {
      readInput(reading);
      continue;
    }
    std::vector<pollfd> fds = jobs_.pollFds();
    fds.push_back({signals.fd(), POLLIN, 0});
    if (reading) fds.push_back({input_.fd(), POLLIN, 0});
    if (poll(fds.data(), fds.size(), kPollMs) < 0 && errno != EINTR) {
      io_.err << "kq: error: waiting for input failed: " << std::strerror(errno) << "\n";
      quit_ = true;
    }
    for (int sig : signals.take()) onSignal(sig, reading);
    if (auto status = jobs_.collect(reading ? input_.output() : streams_)) status_ = *status;
    if (reading && (fds.back().revents & (POLLIN | POLLHUP | POLLERR))) readInput(reading);
  }
  return status_;
}

void Repl::onSignal(int sig, bool& reading) {
  bool waiting = jobs_.hasForeground() || jobs_.hasStarting();
  switch (sig) {
    case SIGINT:
      // Ctrl-C stops the query in the foreground; at the prompt, abandons the line.
      if (quit_) {
        hurry_ = true;
      } else if (waiting) {
        jobs_.interruptForeground();
      } else if (reading) {
        input_.interrupt();
        reading = false;
        pending_.clear();
        remembered_.clear();
      }
      break;
    case SIGTERM:
    case SIGHUP:
      if (reading) input_.pause();
      reading = false;
      hurry_ = quit_;  // a second request does not wait for the queries to say what they saw
      quit_ = true;
      break;
    case SIGWINCH:
      if (reading) input_.resized();
      break;
    case SIGCONT:
      if (reading) input_.resumed();
      break;
  }
}

void Repl::readInput(bool& reading) {
  std::string line;
  switch (input_.read(line)) {
    case LineInput::Read::Nothing: return;
    case LineInput::Read::End:
      reading = false;
      quit_ = true;
      if (pending_.empty()) return;
      line.clear();  // an unfinished input at the end: checked as it is
      break;
    case LineInput::Read::Line:
      reading = false;
      break;
  }
  // A line ending with `\` or inside an unfinished query continues on the next one.
  size_t last = line.find_last_not_of(" \t");
  bool continued = last != std::string::npos && line[last] == '\\';
  if (continued) line.erase(last);
  if (pending_.empty() && line.find_first_not_of(" \t") == std::string::npos) return;
  pending_ += (pending_.empty() ? "" : "\n") + line;
  if (size_t first = line.find_first_not_of(" \t"); first != std::string::npos) {
    size_t end = line.find_last_not_of(" \t");
    remembered_ += (remembered_.empty() ? "" : " ") + line.substr(first, end - first + 1);
  }
  if (!quit_ && (continued || unfinished(pending_))) return;
  std::string input = std::move(pending_);
  pending_.clear();
  if (!remembered_.empty()) input_.remember(remembered_);
  remembered_.clear();
  try {
    handle(input);
  } catch (const std::exception& e) {
    // A bug in kq, not a mistake of the user's: say so, and go on.
    io_.out.flush();
    io_.err << "kq: internal error: " << e.what() << "\n"
            << "  please report it with the input that caused it\n";
    status_ = 1;
  }
  io_.out.flush();
  io_.err.flush();
}

void Repl::handle(const std::string& input) {
  size_t first = input.find_first_not_of(" \t\n");
  if (first == std::string::npos || input[first] == '#') return;
  size_t last = input.find_last_not_of(" \t\n");
  handleCommand(input.substr(first, last - first + 1));
}

void Repl::handleCommand(const std::string& line) {
  status_ = 0;  // what a command (or a query, once it ends) says
  if (line == "quit" || line == "exit") {
    quit_ = true;
  } else if (line == "help") {
    io_.out << kHelp;
  } else if (line == "decls") {
    io_.out << decls_;
  } else if (line == "jobs") {
    jobs_.list(io_.out);
  } else if (startsWith(line, "stop")) {
    std::string n = argument(line);
    char* end = nullptr;
    long number = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || number <= 0 || !jobs_.stop(static_cast<int>(number))) {
      io_.err << "kq: error: no background query `" << n << "`; `jobs` lists them\n";
      status_ = 1;
    }
  } else if (startsWith(line, "info")) {
    status_ = driver::describe(argument(line), env_, io_);
  } else if (startsWith(line, "list")) {
    status_ = driver::listMatches(argument(line), env_, io_);
  } else if (startsWith(line, "check")) {
    // Earlier declarations come first; diagnostics count the lines they take.
    status_ = driver::checkAndRun(request_, "<repl>", decls_ + argument(line) + "\n", false, &env_, io_);
  } else if (startsWith(line, "let") || startsWith(line, "fn") || startsWith(line, "use") ||
             startsWith(line, "config")) {
    status_ = driver::checkAndRun(request_, "<repl>", decls_ + line + "\n", false, &env_, io_);
    if (status_ == 0) decls_ += line + "\n";
  } else {
    bool background = line.back() == '&' && (line.size() < 2 || line[line.size() - 2] != '&');
    runText(background ? line.substr(0, line.size() - 1) : line, background);
  }
}

void Repl::runText(std::string text, bool background) {
  std::string query = text.substr(0, text.find_last_not_of(" \t") + 1);
  driver::ProgramRunner runner = [&](const sema::CheckedProgram& checked, const SourceManager& sources,
                             FileId file, Diagnostics& diags, bool color) {
    io_.out.flush();
    io_.err.flush();
    bool aggregates = std::any_of(checked.program.queries.begin(), checked.program.queries.end(),
                                  [](const sema::ResolvedQuery& q) { return q.aggregates; });
    auto started = jobs_.start(query, [&](const engine::RunHooks& hooks) {
      // A test hook: the query's process crashes, as a bug in kq would make it.
      if (std::getenv("KQ_TEST_CRASH_QUERY")) std::abort();
      int status = 1;
      try {
        status = driver::runProgram(request_, checked, sources, file, env_, nullptr, diags, color, io_, hooks);
      } catch (const std::exception& e) {
        io_.err << "kq: internal error: " << e.what() << "\n"
                << "  please report it with the query that caused it\n";
      }
      io_.out.flush();
      io_.err.flush();
      return status;
    }, background, aggregates);
    if (!started) {
      io_.err << "kq: error: " << started.error().message << "\n";
      return 1;
    }
    return 0;
  };
  status_ = driver::checkAndRun(request_, "<repl>", decls_ + query + "\n", true, &env_, io_, runner);
}

}  // namespace

int runRepl(const driver::Request& request, driver::Io& io) {
  auto env = io.load_kernel(request.btf);
  if (!env) {
    io.err << "kq: error: " << env.error().message << "\n";
    return 1;
  }
  bool terminal = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
  std::string decls;
  driver::KernelEnvironment& kernel = *env;
  CompleteFn completer = [&kernel, &decls](const std::string& text) {
    return complete(CompletionContext{*kernel.btf, *kernel.kernel, decls}, text);
  };
  std::unique_ptr<LineInput> input = terminal ? lineEditor(historyFile(), completer, io.err)
                                              : plainLines(STDIN_FILENO, io.out, io.err);
  // One Host for the whole session: the kernel's features are probed once (here, while the
  // user types), and every job (forked from this process) inherits what was learned.
  engine::Host host;
  warmUp(request, kernel, host);
  driver::Io session_io = io;
  session_io.host = &host;
  if (terminal) io.out << "kq - type a query, or help; Ctrl-C stops a query, Ctrl-D leaves\n";
  io.out.flush();
  Repl repl(request, session_io, kernel, decls, *input);
  int status = repl.run();
  if (terminal) io.out << "\n";
  return status;
}

}  // namespace kq::repl
