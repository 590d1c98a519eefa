#include "tools/kq/cli.h"
#include "driver/build.h"

#include <cctype>
#include <cerrno>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <fcntl.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>

#include "compiler/ast/dump.h"
#include "compiler/diag/render.h"
#include "compiler/parse/literals.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/sema.h"
#include "compiler/sema/types.h"
#include "kq_version.h"
#include "engine/cancellation.h"
#include "engine/event_lines.h"
#include "runtime/fd_output.h"
#include "driver/commands.h"
#include "record/replay.h"
#include "serve/serve.h"
#include "repl/repl.h"
#include "driver/compile.h"
#include "driver/request.h"
#include "driver/run.h"
#include "driver/run_object.h"
#include "driver/version.h"

namespace kq::cli {
namespace {

/// `-o FILE`: the events' stream, on the file (created, or emptied), with standard output's
/// error reporting.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)),
        error_(fd_ < 0 ? std::strerror(errno) : ""),
        buffer_(fd_),
        stream_(&buffer_) {}
  ~OutputFile() {
    stream_.flush();
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  std::ostream& stream() { return stream_; }

 private:
  int fd_;
  std::string error_;
  runtime::FdOutputBuffer buffer_;
  std::ostream stream_;
};

constexpr const char* kExamples = R"(Examples:
  kq 'trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef'
                                  # marked packets over 100 bytes, skb dumped
  kq 'trace tracepoint:syscalls:sys_enter_openat where comm == "cat" select pid, str(filename)'
  kq 'trace syscall:openat select comm, str(filename)' -c 'cat /etc/hostname'
  kq -f json 'trace tracepoint:sched:sched_process_exec select comm, pid'
  kq 'trace syscall:openat select comm, str(filename)' -o opens.txt -d 10s
                                  # events into a file
  kq examples/opensnoop.kq        # run a script
  kq check -e 'trace tcp_sendmsg(sk, size) where size > 4k'
                                  # parse and check only; exit status 1 on errors
  kq check --btf /tmp/other-vmlinux script.kq
                                  # check against another kernel's BTF
  kq build examples/opensnoop.kq -o opensnoop.o
                                  # a BPF object with its plan inside, for kq run
  kq run opensnoop.o -d 10s       # load, attach and print it: no compiling
  kq build --ipft -e 'extension where l4proto == 6 select skb->len as len' -o ext.o
                                  # an extension for ipftrace2: ipft -m 1 -e ext.o
  kq info ip_send_skb             # prototype, and how it can be traced here
  kq info 'struct sk_buff'        # members with offsets and sizes
  kq list 'tcp_v4_*'              # matching functions; also 'tracepoint:net:*', packet
  kq --dump types -e 'trace tcp_v4_* select func'

docs/language.md describes the language.)";

void addInputOptions(CLI::App& app, driver::Request& request) {
  app.add_option_function<std::string>(
         "-e,--expr", [&request](const std::string& text) { request.expression = text; },
         "the query to run, as text")
      ->type_name("QUERY");
  app.add_option("input", request.input, "a query, or a .kq script file")->type_name("QUERY|FILE");
}

bool isRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// The text to compile and the name diagnostics give it, or nullopt after reporting why
/// there is none.
std::optional<std::pair<std::string, std::string>> readInput(const driver::Request& request, driver::Io& io) {
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

/// Standard input, whole (up to one byte more than the parser accepts), or nullopt after
/// saying why it cannot be read.
std::optional<std::string> readStandardInput(driver::Io& io) {
  std::string text;
  char buffer[65536];
  while (text.size() <= parse::kMaxInputBytes) {
    ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      io.err << "kq: error: cannot read standard input: " << std::strerror(errno) << "\n";
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  if (text.size() > parse::kMaxInputBytes) text.resize(parse::kMaxInputBytes + 1);
  return text;
}

/// Reads the input (unless `piped` holds it already), then checks it and (unless `check`)
/// runs it.
int compile(const driver::Request& request, bool run_after, driver::Io& io,
            std::optional<std::pair<std::string, std::string>> piped) {
  auto input = piped ? std::move(piped) : readInput(request, io);
  if (!input) return 1;
  return driver::checkAndRun(request, input->first, std::move(input->second), run_after, nullptr, io);
}

}  // namespace

int run(const std::vector<std::string>& args, driver::Io& io) {
  CLI::App app{"kq - trace the Linux kernel with queries checked against its types (BTF)", "kq"};
  app.footer(kExamples);
  app.set_version_flag("--version", driver::versionText());
  app.fallthrough();

  driver::Request request;
  addInputOptions(app, request);
  app.add_option("--dump", request.dump,
                 "print an intermediate form and stop: ast, types, plan (programs, maps and their "
                 "memory), ir (LLVM IR), bpf (the instructions, with the kq source of each), verifier "
                 "(the verifier's log)")
      ->check(CLI::IsMember({"ast", "types", "plan", "ir", "bpf", "verifier"}))
      ->type_name("FORM");
  app.add_option("-f,--format", request.format,
                 "how events are printed: text (for people), json (for machines), pcapng (their packets, "
                 "for Wireshark: with --packet-bytes), folded (stack tables, for flame graphs) or perfetto "
                 "(calls as slices on a timeline)")
      ->check(CLI::IsMember({"text", "json", "pcapng", "folded", "perfetto"}))
      ->type_name("FORMAT");
  app.add_option("-o,--output", request.output_path,
                 "write events and tables to FILE (replacing it) instead of standard output")
      ->type_name("FILE");
  app.add_option("--prefix", request.prefix,
                 "the columns each event line starts with: none, or some of time,cpu,pid,tid,comm,query,probe "
                 "(default: time, and pid, comm, query and probe where the query does not select them)")
      ->type_name("COLUMNS");
  app.add_option("--packet-view", request.packet_view,
                 "how `trace packet` prints in text: live (each event as it comes), end (by packet, "
                 "when the session ends) or both (default)")
      ->check(CLI::IsMember({"both", "live", "end"}))
      ->type_name("live|end|both");
  app.add_option("--structs", request.structs,
                 "how a struct beneath its event prints in text: compact (one line, its own non-zero "
                 "members, nested ones as {…}; the default) or full (every member, a line each)")
      ->check(CLI::IsMember({"compact", "full"}))
      ->type_name("compact|full");
  app.add_option("--packet-bytes", request.packet_bytes,
                 "keep the first N bytes (1 to 1024) of each event's packet, from its network header, in "
                 "every query of events at a probe with one skb: what -f pcapng writes (default with it: 256)")
      ->check(CLI::Range(1, 1024))
      ->type_name("N");
  app.add_flag("--stack-offsets", request.stack_offsets,
               "a stack that is a table's key keeps each frame's +0x offset (by default its frames "
               "are functions, and stacks alike in them are one group)");
  app.add_option("-p,--pid", request.pid, "trace only this process")->type_name("PID");
  app.add_option("-c,--command", request.command,
                 "run CMD, trace only it and its children, stop when it exits")
      ->type_name("CMD");
  app.add_option("-d,--duration", request.duration, "stop after this long, like `10s`")
      ->type_name("TIME");
  app.add_flag("-v,--verbose", request.verbose,
               "say which attach methods were used; show libbpf's and the verifier's logs");
  app.add_option("--attach", request.attach,
                 "attach kernel functions only with fentry, kprobe (kprobe.multi, then one "
                 "each), kprobe.multi, or, in packet mode, tracepoint (default: each in turn)")
      ->check(CLI::IsMember({"fentry", "kprobe", "kprobe.multi", "tracepoint"}))
      ->type_name("METHOD");
  app.add_flag("--dry-run", request.dry_run,
               "check, compile, load and attach, say how each probe attached, then detach and exit: "
               "whether the query runs on this kernel, without running it (nor -c's command)");
  app.add_flag("--repl", request.repl,
               "an interactive session, reading lines from standard input (the default when "
               "kq has no query and standard input is a terminal)");
  app.add_option("--buffer-size,--buffer", request.buffer,
                 "the event ring buffer's size: `256k`, `8M`, or a number of KiB (a power of "
                 "two, at least 4k; default: room for 2048 of the query's largest event, from "
                 "256k to 4M, one page when it prints only aggregates)")
      ->type_name("SIZE");
  app.add_option("--btf", request.btf,
                 "check against the BTF in FILE (raw, or an ELF with .BTF) instead of this kernel")
      ->type_name("FILE");
  app.add_option("--color", request.color, "colour diagnostics: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");

  CLI::App* check = app.add_subcommand("check", "parse and check a query or script; run nothing");
  check->footer(
      "Exit status: 0 when the input is correct, 1 when it has errors.\n"
      "  --btf FILE       check against another kernel's BTF (raw, or an ELF with .BTF)\n"
      "  --dump types     the type of each expression, per probe\n"
      "Examples:\n"
      "  kq check -e 'trace tcp_sendmsg(sk, size) where size > 4k'\n"
      "  kq check --btf /tmp/other-vmlinux examples/opensnoop.kq");
  addInputOptions(*check, request);

  CLI::App* build = app.add_subcommand(
      "build", "compile a script into a BPF object for `kq run`, or an extension for ipftrace2");
  addInputOptions(*build, request);
  build->add_option("-o,--output", request.object_path, "the object file to write")
      ->required()
      ->type_name("FILE");
  build->add_flag("--ipft", request.ipft,
                  "compile the script's `extension` into what `ipft -e FILE` links");
  build->footer("--btf FILE compiles against another kernel's BTF.");

  CLI::App* run_object = app.add_subcommand(
      "run", "run an object written by `kq build`: load, attach and print, compiling nothing");
  run_object->add_option("object", request.input, "the object file")
      ->required()
      ->type_name("FILE");
  run_object->footer("-f, -o, --prefix, -d, -v, --attach and --dump plan|verifier work as for a script.");

  CLI::App* info = app.add_subcommand("info", "describe a kernel function, type, tracepoint, USDT probe or BPF program");
  info->add_option("what", request.what,
                   "ip_send_skb, 'struct sk_buff', tracepoint:net:net_dev_xmit, syscall:openat")
      ->required()
      ->type_name("WHAT");
  info->footer(
      "Examples:\n"
      "  kq info ip_send_skb                  its prototype, and how it can be traced here\n"
      "  kq info 'struct sk_buff'             members with offsets and sizes\n"
      "  kq info tracepoint:net:net_dev_xmit  the record's fields and BTF arguments\n"
      "  kq info syscall:openat               its arguments\n"
      "  kq info usdt:./app:request           each site of a USDT probe, and its operands\n"
      "  kq info bpf:xdp_prog                 a loaded BPF program: id, tag, signature, verdicts");
  CLI::App* list = app.add_subcommand("list", "list functions, tracepoints, syscalls, perf events, USDT probes, iterators or BPF programs");
  list->add_option("pattern", request.what,
                   "a glob: 'tcp_v4_*', 'tracepoint:net:*', 'syscall:open*', or packet")
      ->required()
      ->type_name("PATTERN");
  list->footer(
      "Examples:\n"
      "  kq list 'tcp_v4_*'               kernel functions\n"
      "  kq list 'tracepoint:net:*'       tracepoints\n"
      "  kq list 'syscall:open*'          system calls\n"
      "  kq list 'rawtracepoint:sched_*'  tracepoints by their BTF names\n"
      "  kq list 'software:*'             perf events\n"
      "  kq list 'usdt:./app:*'           a binary's USDT probes\n"
      "  kq list 'iter:*'                 the kernel's BPF iterators\n"
      "  kq list 'bpf:*'                  the BPF programs loaded now\n"
      "  kq list packet                   the functions packet mode traces");

  CLI::App* record = app.add_subcommand(
      "record", "run a query or script, printing it as kq does, and keep its events in FILE for `kq replay`");
  addInputOptions(*record, request);
  record->add_option("-o,--output", request.record_path, "the recording to write (replaced)")
      ->required()
      ->type_name("FILE");
  record->add_option("--max-size", request.max_size,
                     "stop once the recording holds this much (`1G`, `512M`)")
      ->type_name("SIZE");
  record->add_flag("-q,--quiet", request.quiet, "record without printing the events");
  record->footer(
      "-d, -c, -p, -f and the other options of a run work as they do there.\n"
      "Examples:\n"
      "  kq record -o opens.kqr -d 10s 'trace syscall:openat select comm, str(filename)'\n"
      "  kq replay opens.kqr                              prints what the run printed\n"
      "  kq replay opens.kqr 'group by comm select comm, count()'\n"
      "See docs/record.md.");

  std::string replay_path;
  std::string replay_query;
  bool replay_info = false;
  CLI::App* replay = app.add_subcommand(
      "replay", "print a recording of `kq record` again, or ask it a new query; no root, BTF or kernel needed");
  replay->add_option("recording", replay_path, "the file `kq record -o` wrote")->required()->type_name("FILE");
  replay->add_option("query", replay_query,
                     "a new query over the recorded events: `where ...`, `group by ...`, `select ...` "
                     "(`trace PROBE ...` picks the recorded probes it reads)")
      ->type_name("QUERY");
  replay->add_flag("--info", replay_info, "say where and when it was recorded, what it holds and lost, and stop");
  replay->footer("-f, -o, --prefix, --structs and --packet-view work as for a run (default: as the run printed).");

  serve::ServeOptions serve_options;
  CLI::App* serve = app.add_subcommand(
      "serve", "run scripts until stopped, their tables as Prometheus metrics on /metrics");
  serve->add_option("paths", serve_options.paths, "directories of .kq scripts, or scripts")
      ->required()
      ->type_name("DIR|FILE");
  serve->add_option("--listen", serve_options.listen,
                    "where /metrics, /healthz and /readyz answer (default 127.0.0.1:9435)")
      ->type_name("HOST:PORT");
  serve->add_option("--events", serve_options.events,
                    "write the events of queries that select them to FILE as JSON lines (default: "
                    "standard output)")
      ->type_name("FILE");
  serve->add_option("--events-max-bytes", serve_options.events_max_bytes,
                    "rotate the events file (to FILE.1) once it holds this many bytes (default 64 MiB)")
      ->type_name("BYTES");
  std::string remote_interval = "15s";
  serve->add_option("--remote-write", serve_options.remote_write,
                    "also push the metrics to URL with Prometheus' remote-write protocol "
                    "(http://HOST:PORT/api/v1/write)")
      ->type_name("URL");
  serve->add_option("--remote-write-interval", remote_interval, "how often to push (default 15s)")
      ->type_name("TIME");
  serve->add_option("--instance", serve_options.instance,
                    "the `instance` label of pushed series (default: this machine's name)")
      ->type_name("NAME");
  serve->add_flag("--check", serve_options.check_only,
                  "check each script as kq serve would run it (names, aggregates); run nothing");
  serve->footer("Scripts are read again every 2 s and on SIGHUP; SIGINT or SIGTERM stops. See docs/serve.md.");

  // `kq lsit tcp_*`: a word that is no command, file or query, but is near a command.
  if (!args.empty() && args[0].find_first_of(" \t\n:/.") == std::string::npos && args[0][0] != '-') {
    struct stat st {};
    std::vector<std::string_view> commands = {"check", "build", "run", "info", "list", "serve", "record", "replay"};
    std::optional<std::string> close = sema::closestName(args[0], commands);
    if (close && *close != args[0] && ::stat(args[0].c_str(), &st) != 0) {
      io.err << "kq: error: `" << args[0] << "` is not a command of kq's; did you mean `kq " << *close << "`?\n";
      return 2;
    }
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e, io.out, io.err);
    return status == 0 ? 0 : 2;
  }

  if (info->parsed()) return driver::runInfo(request.what, request.btf, io);
  if (serve->parsed()) {
    auto parsed = parse::decodeNumber(remote_interval);
    auto* ns = std::get_if<parse::DecodedNumber>(&parsed);
    if (!ns || ns->unit != ast::NumberUnit::Nanoseconds || ns->value < 100'000'000) {
      io.err << "kq serve: error: --remote-write-interval takes a duration of 100ms or more (`15s`), not `"
             << remote_interval << "`\n";
      return 2;
    }
    serve_options.remote_write_ms = ns->value / 1'000'000;
    return serve::runServe(serve_options, io);
  }
  if (list->parsed()) return driver::runList(request.what, request.btf, io);
  if (replay->parsed()) {
    record::ReplayRequest r;
    r.path = replay_path;
    r.query = replay_query;
    // A query in a file (`kq replay F.kqr drops.kq`), named by its path in diagnostics.
    if (replay_query.size() > 3 && replay_query.compare(replay_query.size() - 3, 3, ".kq") == 0) {
      std::string error;
      std::optional<std::string> text = io.read_file(replay_query, error);
      if (!text) {
        io.err << "kq replay: error: cannot read `" << replay_query << "`: " << error << "\n";
        return 1;
      }
      r.query = std::move(*text);
      r.query_name = replay_query;
    }
    r.info = replay_info;
    r.output_path = request.output_path;
    if (app.get_option("-f")->count() > 0) r.format = request.format;
    if (app.get_option("--prefix")->count() > 0) r.prefix = request.prefix;
    if (app.get_option("--structs")->count() > 0) r.structs = request.structs;
    if (app.get_option("--packet-view")->count() > 0) r.packet_view = request.packet_view;
    if (app.get_option("--stack-offsets")->count() > 0) r.stack_offsets = true;
    r.color = request.color;
    return record::runReplay(r, io.out, io.err);
  }
  if (record->parsed() && app.get_option("-o")->count() > 0) {
    io.err << "kq record: error: -o names the recording; give it once, after `record`\n";
    return 2;
  }
  if (record->parsed() && !request.max_size.empty() && !driver::byteSize(request.max_size)) {
    io.err << "kq record: error: --max-size takes a size of 4k or more (`1G`, `512M`), not `" << request.max_size
           << "`\n";
    return 2;
  }
  if (record->parsed()) {
    // Said before anything compiles or loads: a recording that cannot be written.
    int fd = ::open(request.record_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      io.err << "kq record: error: cannot write `" << request.record_path << "`: " << std::strerror(errno) << "\n";
      return 1;
    }
    ::close(fd);
  }
  std::optional<std::pair<std::string, std::string>> piped;
  // `kq ''` (a script's empty variable) is an empty query, as `kq -e ''` is: said so.
  if (!request.expression && request.input.empty() && app.get_option("input")->count() > 0) {
    request.expression = std::string();
  }
  if (!request.expression && request.input.empty()) {
    // No query: at a terminal (or with --repl), an interactive session; otherwise a script
    // on standard input (`echo 'trace ...' | kq`), run like a script file.
    if (request.repl || isatty(STDIN_FILENO) == 1) return repl::runRepl(request, io);
    std::optional<std::string> text = readStandardInput(io);
    if (!text) return 1;
    if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
      io.err << app.help();
      return 2;
    }
    piped = std::pair{std::string("<stdin>"), std::move(*text)};
  }
  if (request.expression && !request.input.empty()) {
    io.err << "kq: error: give the query either with -e or as an argument, not both\n";
    return 2;
  }
  // Given but empty: a script's unset variable, not a wish to trace everything for ever.
  auto givenEmpty = [&](const char* name, const std::string& value) {
    if (app.get_option(name)->count() == 0 || !value.empty()) return false;
    io.err << "kq: error: " << name << " needs a value; it was given an empty one\n";
    return true;
  };
  if (givenEmpty("-c", request.command) || givenEmpty("-d", request.duration)) return 2;
  if (app.get_option("-p")->count() > 0 && request.pid == 0) {
    io.err << "kq: error: -p needs a process id; 0 is not one\n";
    return 2;
  }
  if (app.get_option("-p")->count() > 0 && !request.command.empty()) {
    io.err << "kq: error: -p traces a process that runs, -c one that kq starts: give one of them\n";
    return 2;
  }
  if (!request.buffer.empty() && !driver::ringBufferBytes(request.buffer)) {
    io.err << "kq: error: --buffer-size takes a power of two from 4k to 1G (`256k`, `8M`, or a "
              "number of KiB), not `"
           << request.buffer << "`\n";
    return 2;
  }
  if (!request.prefix.empty()) {
    std::string error;
    if (!engine::parsePrefix(request.prefix, &error)) {
      io.err << "kq: error: " << error << "\n";
      return 2;
    }
  }
  // `-f json` once meant the format: said so, and taken as it was meant.
  if ((request.output_path == "json" || request.output_path == "text") && app.get_option("-f")->count() == 0) {
    io.err << "kq: note: `-o " << request.output_path << "` is `-f " << request.output_path
           << "` now (-o names a file: `-o ./" << request.output_path << "` writes one)\n";
    request.format = request.output_path;
    request.output_path.clear();
  }
  // pcap-ng is made of packets: keep some of each unless told how much.
  if (request.format == "pcapng" && request.packet_bytes == 0) request.packet_bytes = 256;
  std::optional<OutputFile> output_file;
  if (!request.output_path.empty()) {
    output_file.emplace(request.output_path);
    if (!output_file->ok()) {
      io.err << "kq: error: cannot write `" << request.output_path << "`: " << output_file->error() << "\n";
      return 1;
    }
  }
  // A stop requested while the query compiles or loads ends the session as soon as it begins.
  engine::Cancellation stop;
  std::optional<engine::SignalStop> stop_signals;
  driver::Io run_io{output_file ? output_file->stream() : io.out, io.err, io.read_file, io.err_is_terminal,
                    io.load_kernel, io.host, &stop, /*stops_end_phases=*/true};
  if (run_object->parsed()) {
    if (app.get_option("--buffer-size")->count() > 0) {
      io.err << "kq: error: the ring buffer's size is built into the object: give "
                "--buffer-size to `kq build`\n";
      return 2;
    }
    stop_signals.emplace(stop);
    return driver::runObject(request, run_io);
  }
  request.build = build->parsed();
  if (driver::isCExtension(request)) return driver::buildCExtension(request, io);
  if (check->parsed() || build->parsed()) {
    return compile(request, /*run_after=*/!check->parsed(), io, std::move(piped));
  }
  stop_signals.emplace(stop);
  return compile(request, /*run_after=*/true, run_io, std::move(piped));
}

}  // namespace kq::cli
