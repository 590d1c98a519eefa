#include "driver/build.h"

#include <sys/utsname.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "compiler/diag/render.h"
#include "compiler/lower/lower.h"
#include "kq_version.h"
#include "runtime/object_check.h"
#include "runtime/object_file.h"
#include "plan/portable_plan.h"
#include "driver/io.h"
#include "driver/query_sources.h"
#include "driver/run.h"

namespace kq::driver {
namespace {

bool writeObject(const std::string& path, const std::vector<char>& bytes, Io& io) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    io.err << fmt::format("kq: error: cannot write `{}`: {}\n", path, std::strerror(errno));
    return false;
  }
  return true;
}

int buildExtension(const Request& request, const sema::CheckedProgram& checked,
                   const SourceManager& sources, FileId file, const KernelEnvironment& env,
                   Diagnostics& diags, bool color, Io& io) {
  const sema::Program& program = checked.program;
  if (program.extensions.size() != 1 || !program.queries.empty()) {
    renderDiagnostics(diags, sources, io.err, RenderOptions{color});
    io.err << fmt::format(
        "kq: error: --ipft builds one `extension`; the input has {} and {} {}\n",
        program.extensions.size(), program.queries.size(),
        program.queries.size() == 1 ? "query" : "queries");
    return 1;
  }
  std::string error;
  auto object = lower::lowerExtension(checked, program.extensions.front(), *env.btf, sources,
                                      file, diags, &error);
  renderDiagnostics(diags, sources, io.err, RenderOptions{color});
  if (!object) {
    if (!error.empty()) io.err << "kq: error: " << error << "\n";
    return 1;
  }
  return writeObject(request.object_path, object->elf, io) ? 0 : 1;
}

/// The record fields of every classic tracepoint the plan attaches to, as this kernel's
/// tracefs describes them (none with --btf, which knows no tracefs).
std::vector<plan::TracepointRecord> tracepointRecords(const plan::ProgramPlan& plan,
                                                         host::KernelInfo& kernel) {
  std::set<std::string> events;
  for (const plan::PlannedProgram& p : plan.programs) {
    if (p.attach == plan::Attach::Tracepoint) events.insert(p.target);
  }
  std::vector<plan::TracepointRecord> out;
  for (const std::string& event : events) {
    plan::TracepointRecord record{event, {}};
    size_t slash = event.find('/');
    auto format = kernel.tracepointFormat(event.substr(0, slash), event.substr(slash + 1));
    if (format) {
      for (const host::TracepointField& f : format->fields) {
        record.fields.push_back({f.name, f.offset, f.size});
      }
    }
    out.push_back(std::move(record));
  }
  return out;
}

std::string builtAgainst(const Request& request) {
  if (!request.btf.empty()) return fmt::format("the BTF file `{}`", request.btf);
  struct utsname name;
  if (uname(&name) != 0) return "this kernel";
  return fmt::format("Linux {} ({})", name.release, name.machine);
}

std::string machine() {
  struct utsname name;
  return uname(&name) == 0 ? name.machine : "";
}

/// A script compiled into a BPF object with its plan in `.kq.plan`, for `kq run`.
int buildPortable(const Request& request, const sema::CheckedProgram& checked,
                  const SourceManager& sources, FileId file, const KernelEnvironment& env,
                  Diagnostics& diags, bool color, Io& io) {
  if (request.pid || !request.command.empty()) {
    renderDiagnostics(diags, sources, io.err, RenderOptions{color});
    io.err << "kq: error: an object built by `kq build` traces every process; -p and -c "
              "work when kq runs the script itself\n";
    return 2;
  }
  lower::LowerOptions options;
  options.ringbuf_bytes = request.buffer.empty() ? 0 : ringBufferBytes(request.buffer).value_or(0);
  std::optional<lower::CompiledProgram> compiled =
      lowerAndReport(checked, *env.btf, sources, file, options, diags, color, io);
  if (!compiled) return 1;
  plan::PortablePlan plan;
  plan.plan = std::move(compiled->plan);
  plan.limits = queryLimits(checked);
  plan.query_sources = querySources(checked, sources);
  plan.kq_version = KQ_VERSION;
  plan.built_against = builtAgainst(request);
  plan.machine = machine();
  plan.tracepoints = tracepointRecords(plan.plan, *env.kernel);
  std::string error;
  auto object = runtime::addSection(compiled->object.elf, runtime::kPlanSection,
                                    plan::encodePlan(plan), &error);
  if (!object) {
    io.err << "kq: error: cannot add the plan to the compiled object: " << error << "\n";
    return 1;
  }
  // Read back as `kq run` will read it: an object it would refuse is kq's own mistake.
  runtime::ObjectPlan read = runtime::readObjectPlan(*object);
  if (!read.plan) {
    io.err << "kq: error: internal error: `kq run` would refuse the object built: " << read.error << "\n";
    return 1;
  }
  return writeObject(request.object_path, *object, io) ? 0 : 1;
}

}  // namespace

int buildObject(const Request& request, const sema::CheckedProgram& checked,
                const SourceManager& sources, FileId file, const KernelEnvironment& env,
                Diagnostics& diags, bool color, Io& io) {
  if (request.ipft) return buildExtension(request, checked, sources, file, env, diags, color, io);
  return buildPortable(request, checked, sources, file, env, diags, color, io);
}

}  // namespace kq::driver
