#include "driver/run_object.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "host/kernel_info.h"
#include "runtime/libbpf_log.h"
#include "runtime/loader.h"
#include "runtime/object_check.h"
#include "plan/portable_plan.h"
#include "driver/engine_run.h"
#include "driver/dump_plan.h"
#include "driver/run.h"

namespace kq::driver {
namespace {

/// Larger than any object kq writes; a bigger file is not one.
constexpr off_t kMaxObjectBytes = 256 << 20;

/// Why `mode` is not a file `kq build` could have written, or null.
const char* notAnObject(mode_t mode) {
  if (S_ISREG(mode)) return nullptr;
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISFIFO(mode)) return "it is a FIFO, not a file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "it is a device, not a file";
  return "it is not a regular file";
}

/// The bytes of the regular file `path`. Opened without waiting (a FIFO with no writer
/// would block an open for reading), then refused at once unless it is a regular file.
std::optional<std::vector<char>> readObject(const std::string& path, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st;
  std::optional<std::vector<char>> bytes;
  if (fstat(fd, &st) != 0) {
    *error = std::strerror(errno);
  } else if (const char* why = notAnObject(st.st_mode)) {
    *error = why;
  } else if (st.st_size > kMaxObjectBytes) {
    *error = "it is larger than any object kq builds";
  } else {
    bytes.emplace(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes->size()) {
      ssize_t n = read(fd, bytes->data() + done, bytes->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = std::strerror(errno);
        bytes.reset();
        break;
      }
      if (n == 0) {  // it shrank as it was read
        bytes->resize(done);
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  close(fd);
  return bytes;
}

std::string runningKernel() {
  struct utsname name;
  if (uname(&name) != 0) return "this kernel";
  return fmt::format("Linux {} ({})", name.release, name.machine);
}

/// Why the object's classic tracepoints cannot be read here, or empty. Their records'
/// offsets are compiled in from the building kernel's tracefs, not relocated: every field
/// recorded must be where it was.
std::string tracepointProblem(const plan::PortablePlan& portable) {
  if (portable.tracepoints.empty()) return "";
  (void)host::mountTracefs();
  std::unique_ptr<host::KernelInfo> kernel = host::systemKernel();
  for (const plan::TracepointRecord& record : portable.tracepoints) {
    size_t slash = record.event.find('/');
    std::string category = record.event.substr(0, slash);
    std::string event = slash == std::string::npos ? "" : record.event.substr(slash + 1);
    auto format = kernel->tracepointFormat(category, event);
    if (!format) {
      return fmt::format("it attaches to tracepoint `{}:{}`, which this kernel cannot give: {}",
                         category, event, format.error().message);
    }
    for (const plan::RecordField& want : record.fields) {
      const host::TracepointField* here = nullptr;
      for (const host::TracepointField& f : format->fields) {
        if (f.name == want.name) here = &f;
      }
      if (here && here->offset == want.offset && here->size == want.size) continue;
      std::string where = here ? fmt::format("at offset {} ({} bytes)", here->offset, here->size)
                               : std::string("nowhere");
      return fmt::format(
          "tracepoint `{}:{}` has field `{}` {} here, but at offset {} ({} bytes) where the "
          "object was built; classic tracepoint records are not relocated: build the object "
          "again on this kernel",
          category, event, want.name, where, want.offset, want.size);
    }
  }
  return "";
}

/// The line of libbpf's log that names a CO-RE relocation this kernel's types could not
/// satisfy, or empty.
std::string failedRelocation(const std::string& log) {
  size_t at = log.find("failed to resolve CO-RE relocation");
  if (at == std::string::npos) return "";
  size_t end = log.find('\n', at);
  return log.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

std::optional<BuiltObject> readBuiltObject(const std::string& path, std::string& error, bool* not_built) {
  std::optional<std::vector<char>> elf = readObject(path, &error);
  if (not_built) *not_built = false;
  if (!elf) return std::nullopt;
  runtime::ObjectPlan read = runtime::readObjectPlan(*elf);
  if (!read.plan) {
    error = read.error;
    if (not_built) *not_built = !read.has_plan;
    return std::nullopt;
  }
  return BuiltObject{std::move(*elf), std::move(*read.plan)};
}

std::string cannotRunHere(const plan::PortablePlan& plan) {
  struct utsname name;
  if (uname(&name) == 0 && plan.machine != name.machine) {
    return fmt::format("it reads function arguments as {} passes them, and this is {}", plan.machine, name.machine);
  }
  return tracepointProblem(plan);
}

std::string builtAgainstNote(const std::string& path, const plan::PortablePlan& plan) {
  return fmt::format("note: `{}` was built by kq {} against {}; this is {}\n", path, plan.kq_version,
                     plan.built_against, runningKernel());
}

int runObject(const Request& request, Io& io) {
  RunEnvironment run(io);  // the caller's host and stop signals, or its own
  runtime::setLibbpfVerbose(request.verbose);
  if (request.pid || !request.command.empty() || !request.btf.empty()) {
    io.err << "kq: error: `kq run` runs an object as it was built: -p and -c work when kq "
              "runs the script itself, and --btf belongs to `kq build`\n";
    return 2;
  }
  if (!request.dump.empty() && request.dump != "plan" && request.dump != "verifier") {
    io.err << fmt::format("kq: error: `kq run` has no source to show as {}: only --dump plan "
                          "and --dump verifier\n", request.dump);
    return 2;
  }
  std::optional<uint64_t> duration = sessionDuration(request, io);
  if (!duration) return 2;

  const std::string& path = request.input;
  std::string error;
  bool not_built = false;
  std::optional<BuiltObject> built = readBuiltObject(path, error, &not_built);
  if (!built) {
    io.err << fmt::format("kq: error: cannot run `{}`: {}\n", path, error);
    if (not_built) io.err << "note: `kq build SCRIPT -o FILE` writes objects `kq run` runs\n";
    return 1;
  }
  const std::vector<char>* elf = &built->elf;
  const plan::PortablePlan* portable = &built->plan;
  const plan::ProgramPlan& plan = portable->plan;
  if (request.dump == "plan") {
    dumpPlan(plan, io.out);
    return 0;
  }
  auto builtAgainst = [&] { return builtAgainstNote(path, *portable); };
  if (!canLoadPrograms(io)) return 1;
  if (std::string problem = cannotRunHere(*portable); !problem.empty()) {
    io.err << fmt::format("kq: error: cannot run `{}`: {}\n", path, problem);
    io.err << builtAgainst();
    return 1;
  }

  runtime::LoadOptions load_options;
  load_options.verifier_log = request.dump == "verifier";
  load_options.defer_detach = true;  // this process ends with its session
  load_options.method = request.attach;
  load_options.process = static_cast<pid_t>(request.pid);
  engine::Engine engine(run.host());
  runtime::LoadResult loaded = engine.load(*elf, plan, load_options);
  if (!loaded.object) {
    const runtime::LoadFailure& failure = *loaded.failure;
    std::string relocation = failure.verifier ? failedRelocation(failure.verifier->log) : "";
    if (!relocation.empty()) {
      io.err << fmt::format("kq: error: cannot run `{}`: a kernel type it reads is not in this "
                            "kernel (libbpf: {})\n", path, relocation);
    } else if (failure.verifier && failure.verifier->instruction >= 0) {
      io.err << fmt::format("kq: error: the kernel's verifier rejected program `{}` of `{}`: {}\n",
                            failure.verifier->program, path, failure.verifier->message);
      if (request.verbose) io.err << failure.verifier->log << "\n";
    } else {
      io.err << "kq: error: " << failure.message << "\n";
    }
    io.err << builtAgainst();
    return 1;
  }
  if (request.dry_run) return dryRunReport(*loaded.object, plan, io);
  if (request.verbose) {
    for (const std::string& note : loaded.object->notes()) io.err << "kq: " << note << "\n";
  }
  for (const std::string& line : loaded.object->readyLines(plan)) io.err << "kq: " << line << "\n";
  io.err.flush();
  if (request.dump == "verifier") {
    for (const auto& [program, log] : loaded.object->verifierLogs()) {
      io.out << "# " << program << "\n" << log << "\n";
    }
    return 0;
  }

  engine::SessionOptions session;
  session.queries = portable->limits;
  session.duration_ns = *duration;
  // The object's BTF ids are another kernel's (or may be): dumps find types by name.
  runtime::KernelTypes kernel_types("/sys/kernel/btf", nullptr);
  engine::SessionResult result = runSession(engine, *loaded.object, plan, &kernel_types, request,
                                            std::move(session), run.stop(), io, portable->query_sources);
  return result.output_failure.empty() || result.reader_gone ? 0 : 1;
}

}  // namespace kq::driver
