// `kq` at a terminal: an interactive session. Each line is a query (run until Ctrl-C, `for`
// or `limit`), a declaration kept for the lines that follow (`let`, `fn`, `use`), or a
// command (`info`, `list`, `check`, `help`, `quit`).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <editline/readline.h>

#include "tools/kq/commands.h"
#include "tools/kq/compile.h"

namespace kq::cli {
namespace {

constexpr const char* kHelp = R"(Type a query to run it; Ctrl-C stops it and comes back here:
  trace syscall:openat select comm, str(filename)
  trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 for 5s
Declarations are kept for the queries after them:
  let big = 4k
  fn ms(ns) = ns / 1000000
  use net
Commands:
  check QUERY     check a query without running it
  info WHAT       a function's prototype, a struct's layout, a tracepoint's fields
  list PATTERN    matching functions, tracepoints (tracepoint:net:*), syscalls, packet
  decls           the declarations kept so far
  help, quit (or Ctrl-D)
)";

bool startsWith(const std::string& line, const char* word) {
  size_t n = std::strlen(word);
  return line.compare(0, n, word) == 0 && (line.size() == n || line[n] == ' ');
}

/// The next line, from the line editor at a terminal, else from standard input.
bool nextLine(bool terminal, std::string& line) {
  if (terminal) {
    char* text = readline("kq> ");
    if (!text) return false;
    line = text;
    if (!line.empty()) add_history(text);
    std::free(text);
    return true;
  }
  return static_cast<bool>(std::getline(std::cin, line));
}

}  // namespace

int runRepl(const Request& request, Io& io) {
  bool terminal = isatty(STDIN_FILENO) == 1;
  auto env = io.load_kernel(request.btf);
  if (!env) {
    io.err << "kq: error: " << env.error().message << "\n";
    return 1;
  }
  if (terminal) io.out << "kq - type a query, or help; Ctrl-C stops a query, Ctrl-D leaves\n";
  // At the prompt Ctrl-C does nothing; a running query takes it to stop.
  signal(SIGINT, SIG_IGN);
  std::string decls;  // `let`, `fn` and `use` lines so far
  std::string line;
  int status = 0;
  while (nextLine(terminal, line)) {
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    if (line == "quit" || line == "exit") break;
    if (line == "help") {
      io.out << kHelp;
      continue;
    }
    if (line == "decls") {
      io.out << decls;
      continue;
    }
    if (startsWith(line, "info")) {
      status = runInfo(line.substr(std::min<size_t>(line.size(), 5)), request.btf, io);
      continue;
    }
    if (startsWith(line, "list")) {
      status = runList(line.substr(std::min<size_t>(line.size(), 5)), request.btf, io);
      continue;
    }
    bool check = startsWith(line, "check");
    if (check) line = line.substr(std::min<size_t>(line.size(), 6));
    bool declaration = startsWith(line, "let") || startsWith(line, "fn") || startsWith(line, "use");
    // Earlier declarations come first; diagnostics count the lines they take.
    std::string text = decls + line + "\n";
    status = checkAndRun(request, "<repl>", text, !check && !declaration, &*env, io);
    if (declaration && status == 0) decls += line + "\n";
    io.out.flush();
    io.err.flush();
  }
  if (terminal) io.out << "\n";
  return status;
}

}  // namespace kq::cli
