#include "driver/run_object.h"

#include <sys/utsname.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "host/kernel_info.h"
#include "runtime/libbpf_log.h"
#include "runtime/loader.h"
#include "runtime/object_file.h"
#include "plan/portable_plan.h"
#include "driver/engine_run.h"
#include "driver/dump_plan.h"
#include "driver/run.h"

namespace kq::driver {
namespace {

/// Larger than any object kq writes; a bigger file is not one.
constexpr std::streamsize kMaxObjectBytes = 256 << 20;

std::optional<std::vector<char>> readObject(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : -1;
  if (size > kMaxObjectBytes) {
    *error = "it is larger than any object kq builds";
    return std::nullopt;
  }
  std::vector<char> bytes(size > 0 ? static_cast<size_t>(size) : 0);
  if (in && in.seekg(0) && in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    return bytes;
  }
  *error = errno ? std::strerror(errno) : "it cannot be read";
  return std::nullopt;
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
  std::optional<std::vector<char>> elf = readObject(path, &error);
  std::optional<std::string> text;
  if (elf) text = runtime::sectionContents(*elf, runtime::kPlanSection, &error);
  std::optional<plan::PortablePlan> portable;
  if (text) portable = plan::decodePlan(*text, &error);
  if (!portable) {
    io.err << fmt::format("kq: error: cannot run `{}`: {}\n", path, error);
    if (elf && !text) io.err << "note: `kq build SCRIPT -o FILE` writes objects `kq run` runs\n";
    return 1;
  }
  const plan::ProgramPlan& plan = portable->plan;
  if (request.dump == "plan") {
    dumpPlan(plan, io.out);
    return 0;
  }
  std::string here = runningKernel();
  auto builtAgainst = [&] {
    return fmt::format("note: `{}` was built by kq {} against {}; this is {}\n", path,
                       portable->kq_version, portable->built_against, here);
  };
  struct utsname name;
  if (uname(&name) == 0 && portable->machine != name.machine) {
    io.err << fmt::format("kq: error: cannot run `{}` on {}: it reads function arguments as "
                          "{} passes them\n", path, name.machine, portable->machine);
    io.err << builtAgainst();
    return 1;
  }
  if (!canLoadPrograms(io)) return 1;
  if (std::string problem = tracepointProblem(*portable); !problem.empty()) {
    io.err << fmt::format("kq: error: cannot run `{}`: {}\n", path, problem);
    io.err << builtAgainst();
    return 1;
  }

  runtime::LoadOptions load_options;
  load_options.verifier_log = request.dump == "verifier";
  load_options.method = request.attach;
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
  session.queries = portable->queries;
  session.duration_ns = *duration;
  // The object's BTF ids are another kernel's (or may be): dumps find types by name.
  runtime::KernelTypes kernel_types("/sys/kernel/btf", nullptr);
  engine::SessionResult result = runSession(engine, *loaded.object, plan, &kernel_types, request,
                                            std::move(session), run.stop(), io);
  return result.output_failure.empty() ? 0 : 1;
}

}  // namespace kq::driver
