#include "driver/compile.h"

#include <cstdlib>
#include <cstring>
#include <future>

#include "compiler/ast/dump.h"
#include "compiler/diag/render.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/sema.h"
#include "driver/build.h"
#include "driver/packet_bytes.h"
#include "driver/run.h"

namespace kq::driver {

bool wantColor(const Request& request, const Io& io) {
  if (request.color == "always") return true;
  if (request.color == "never") return false;
  const char* term = std::getenv("TERM");
  return io.err_is_terminal && std::getenv("NO_COLOR") == nullptr &&
         !(term && std::strcmp(term, "dumb") == 0);
}


int checkAndRun(const Request& request, const std::string& name, std::string text,
                bool run_after, const KernelEnvironment* env, Io& io,
                const ProgramRunner& runner) {
  SourceManager sources;
  FileId file = sources.add(name, std::move(text));
  Diagnostics diags;
  RenderOptions render{wantColor(request, io)};
  // The kernel's BTF is read on a thread while the text is parsed: at a start each takes
  // about 2 ms (the parser's first use makes its tables, cmake/lazy_grammar.cmake).
  std::future<Result<KernelEnvironment>> loading;
  if (!env && request.dump != "ast") {
    loading = std::async(std::launch::async, [&io, &request] { return io.load_kernel(request.btf); });
  }
  std::optional<ast::Script> script = parse::parseScript(sources, file, diags);
  if (!script || request.dump == "ast") {
    renderDiagnostics(diags, sources, io.err, render);
    if (script) ast::dumpScript(*script, io.out);
    return script ? 0 : 1;
  }

  Result<KernelEnvironment> loaded = Error{""};
  KernelEnvironment* disposable = nullptr;  // ours, not the REPL's: freed when done with
  if (!env) {
    loaded = loading.get();
    if (!loaded) {
      io.err << "kq: error: " << loaded.error().message << "\n";
      return 1;
    }
    env = disposable = &*loaded;
  }
  // Running a query reads tracepoint formats: mount tracefs first (sema looks lazily). A
  // failure is left for sema to explain where it matters.
  if (run_after && request.btf.empty()) (void)host::mountTracefs();
  std::optional<sema::CheckedProgram> checked =
      sema::analyze(*script, sources, *env->btf, *env->kernel, diags);
  if (checked && request.packet_bytes && run_after && !request.build) {
    // Checked again with the packet's columns where the first check found packets.
    if (addPacketColumns(*script, *checked, request.packet_bytes, sources) > 0) {
      Diagnostics again;
      checked = sema::analyze(*script, sources, *env->btf, *env->kernel, again);
      if (!checked) {
        renderDiagnostics(again, sources, io.err, render);
        return 1;
      }
    } else {
      io.err << "kq: note: --packet-bytes keeps nothing: no query prints events of a probe with one "
                "`struct sk_buff *`\n";
    }
  }
  if (!checked || !run_after || request.dump == "types") {
    renderDiagnostics(diags, sources, io.err, render);
  }
  if (!checked) return 1;
  if (request.dump == "types") {
    sema::dumpTypes(*checked, sources, io.out);
    return 0;
  }
  if (!run_after) return 0;
  if (request.build) {
    return buildObject(request, *checked, sources, file, *env, diags, render.color, io);
  }
  if (runner) return runner(*checked, sources, file, diags, render.color);
  return runProgram(request, *checked, sources, file, *env, disposable, diags, render.color, io);
}

}  // namespace kq::driver
