#include "tools/kq/build.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "compiler/diag/render.h"
#include "compiler/lower/lower.h"

namespace kq::cli {
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

}  // namespace

int buildObject(const Request& request, const sema::CheckedProgram& checked,
                const SourceManager& sources, FileId file, const KernelEnvironment& env,
                Diagnostics& diags, bool color, Io& io) {
  if (request.ipft) return buildExtension(request, checked, sources, file, env, diags, color, io);
  renderDiagnostics(diags, sources, io.err, RenderOptions{color});
  io.err << "kq: error: `kq build` writes ipftrace2 extensions only so far (`--ipft`); "
            "portable objects for `kq run` are not done yet\n";
  return 1;
}

}  // namespace kq::cli
