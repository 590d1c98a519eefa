// Running a checked program: compile to BPF, load, attach, print events until stopped.
#pragma once

#include "compiler/sema/sema.h"
#include "tools/kq/cli.h"
#include "tools/kq/request.h"

namespace kq::cli {

/// Returns the exit status. `env` is what `checked` was checked against; when nothing after
/// this run needs it (a one-shot command, not the REPL), `disposable` is the same
/// environment, whose BTF is freed once compiled (the runtime reads its own as needed).
/// `checked` then refers to freed types: only its syntax is read after that.
int runProgram(const Request& request, const sema::CheckedProgram& checked,
               const SourceManager& sources, FileId file, const KernelEnvironment& env,
               KernelEnvironment* disposable, Diagnostics& diags, bool color, Io& io);

}  // namespace kq::cli
