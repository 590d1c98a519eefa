// `kq build --ipft ext.c -o ext.o`: an ipftrace2 C extension, unchanged, compiled in-process
// by the C plugin as ipftrace2's Makefiles compile them (`clang -target bpf -O2 -g -c`),
// with `ipft.h` (what `ipft --gen bpf-module-header` prints) on the include path. The
// object is what `ipft -e ext.o` links, like that of an extension written in kq.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/c/c_diagnostics.h"
#include "compiler/c/c_plugin.h"
#include "compiler/c/ipft_header.h"
#include "compiler/diag/render.h"
#include "driver/build.h"
#include "driver/compile.h"

namespace kq::driver {

bool isCExtension(const Request& request) {
  const std::string& in = request.input;
  return request.build && request.ipft && !request.expression && in.size() > 2 &&
         in.compare(in.size() - 2, 2, ".c") == 0;
}

int buildCExtension(const Request& request, Io& io) {
  if (request.object_path.empty()) {
    io.err << "kq: error: --output is required\n";
    return 2;
  }
  Result<c::CFrontend*> frontend = c::loadFrontend();
  if (!frontend) {
    io.err << "kq: error: `kq build --ipft FILE.c` needs kq's C support: "
           << frontend.error().message << "\n";
    return 1;
  }
  Result<std::string> include = c::ipftIncludeDirectory();
  if (!include) {
    io.err << "kq: error: " << include.error().message << "\n";
    return 1;
  }
  c::CInput input{request.input, ""};
  if (c::namesNoRegularFile(input)) {
    io.err << fmt::format("kq: error: `{}` is not a regular file\n", request.input);
    return 1;
  }
  namespace fs = std::filesystem;
  std::string partial = request.object_path + ".kq-tmp";
  c::CObjectResult result =
      (*frontend)->compileObject(input, {"-idirafter", *include}, partial);
  if (!result.found) {
    io.err << fmt::format("kq: error: cannot read `{}`\n", request.input);
    return 1;
  }
  SourceManager sources;
  Diagnostics diags;
  std::ifstream in(request.input, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  FileId file = sources.add(request.input, text.str());
  std::error_code ec;
  if (c::reportCDiagnostics(result.diagnostics, DiagKind::CError, {file, 0, 0}, "", sources,
                            diags)) {
    renderDiagnostics(diags, sources, io.err, RenderOptions{wantColor(request, io)});
    fs::remove(partial, ec);
    return 1;
  }
  fs::rename(partial, request.object_path, ec);
  if (ec) {
    io.err << fmt::format("kq: error: cannot write `{}`: {}\n", request.object_path, ec.message());
    return 1;
  }
  return 0;
}

}  // namespace kq::driver
