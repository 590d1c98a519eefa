// Running a checked program: compile to BPF, load, attach, print events until stopped.
#pragma once

#include "compiler/sema/sema.h"
#include "tools/kq/cli.h"
#include "tools/kq/request.h"

namespace kq::cli {

/// Returns the exit status.
int runProgram(const Request& request, const sema::CheckedProgram& checked,
               const SourceManager& sources, FileId file, const KernelEnvironment& env,
               Diagnostics& diags, bool color, Io& io);

}  // namespace kq::cli
