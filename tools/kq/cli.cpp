#include "tools/kq/cli.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include <CLI/CLI.hpp>

#include "compiler/ast/dump.h"
#include "compiler/diag/render.h"
#include "compiler/parse/parse.h"
#include "kq_version.h"

namespace kq::cli {
namespace {

constexpr const char* kExamples = R"(Examples:
  kq 'trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef'
                                  # marked packets over 100 bytes, skb dumped
  kq 'trace tracepoint:syscalls:sys_enter_openat where comm == "cat" select pid, str(filename)'
  kq examples/opensnoop.kq        # run a script
  kq check -e 'trace tcp_sendmsg(sk, size) where size > 4k'
                                  # parse and check only; exit status 1 on errors
  kq --dump ast -e 'trace tcp_v4_* select func'

docs/language.md describes the language.)";

/// Everything the command line asked for.
struct Request {
  std::optional<std::string> expression;  // -e
  std::string input;       // positional: a query or a script file
  std::string dump;        // --dump
  std::string color = "auto";
};

void addInputOptions(CLI::App& app, Request& request) {
  app.add_option_function<std::string>(
         "-e,--expr", [&request](const std::string& text) { request.expression = text; },
         "the query to run, as text")
      ->type_name("QUERY");
  app.add_option("input", request.input, "a query, or a .kq script file")->type_name("QUERY|FILE");
}

bool wantColor(const Request& request, const Io& io) {
  if (request.color == "always") return true;
  if (request.color == "never") return false;
  const char* term = std::getenv("TERM");
  return io.err_is_terminal && std::getenv("NO_COLOR") == nullptr &&
         !(term && std::strcmp(term, "dumb") == 0);
}

bool isRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// The text to compile and the name diagnostics give it, or nullopt after reporting why
/// there is none.
std::optional<std::pair<std::string, std::string>> readInput(const Request& request, Io& io) {
  if (request.expression) return std::pair{std::string("<input>"), *request.expression};
  const std::string& arg = request.input;
  bool is_file = arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".kq") == 0;
  is_file = is_file || (arg.find_first_of(" \t\n(") == std::string::npos && isRegularFile(arg));
  if (!is_file) return std::pair{std::string("<input>"), arg};

  std::string error;
  std::optional<std::string> text = io.read_file(arg, error);
  if (!text) {
    io.err << "kq: error: cannot read `" << arg << "`: " << error << "\n";
    return std::nullopt;
  }
  return std::pair{arg, std::move(*text)};
}

/// Parses (and, as the compiler grows, checks) the input. Returns the exit status.
int compile(const Request& request, bool run_after, Io& io) {
  auto input = readInput(request, io);
  if (!input) return 1;

  SourceManager sources;
  FileId file = sources.add(input->first, std::move(input->second));
  Diagnostics diags;
  std::optional<ast::Script> script = parse::parseScript(sources, file, diags);
  renderDiagnostics(diags, sources, io.err, RenderOptions{wantColor(request, io)});
  if (!script) return 1;

  if (request.dump == "ast") {
    ast::dumpScript(*script, io.out);
    return 0;
  }
  if (run_after) {
    io.err << "kq: error: this build of kq parses queries but cannot run them yet; "
              "`kq check` checks a query without running it\n";
    return 1;
  }
  return 0;
}

}  // namespace

std::optional<std::string> readFileFromDisk(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  return text.str();
}

int run(const std::vector<std::string>& args, Io& io) {
  CLI::App app{"kq - trace the Linux kernel with queries checked against its types (BTF)", "kq"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("kq ") + KQ_VERSION);
  app.fallthrough();

  Request request;
  addInputOptions(app, request);
  app.add_option("--dump", request.dump, "print an intermediate form and stop")
      ->check(CLI::IsMember({"ast"}))
      ->type_name("ast");
  app.add_option("--color", request.color, "colour diagnostics: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");

  CLI::App* check = app.add_subcommand("check", "parse and check a query or script; run nothing");
  check->footer("Exit status: 0 when the input is correct, 1 when it has errors.");
  addInputOptions(*check, request);

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e, io.out, io.err);
    return status == 0 ? 0 : 2;
  }

  if (!request.expression && request.input.empty()) {
    io.err << app.help();
    return 2;
  }
  if (request.expression && !request.input.empty()) {
    io.err << "kq: error: give the query either with -e or as an argument, not both\n";
    return 2;
  }
  return compile(request, /*run_after=*/!check->parsed(), io);
}

}  // namespace kq::cli
