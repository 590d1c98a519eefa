// One piece of kq text through the compiler: parse, check against the kernel, and (when
// asked) compile and run. Shared by the command line and the REPL.
#pragma once

#include <functional>
#include <string>

#include "compiler/sema/sema.h"
#include "driver/io.h"
#include "driver/request.h"

namespace kq::driver {

/// Compiles and runs a checked program; returns the exit status. runProgram by default; the
/// interactive session runs it in a process of its own.
using ProgramRunner = std::function<int(const sema::CheckedProgram& checked,
                                        const SourceManager& sources, FileId file,
                                        Diagnostics& diags, bool color)>;

/// Checks `text` (named `name` in diagnostics) and, if `run_after`, runs it with `runner`;
/// honours `request.dump`. `env` is the kernel to check against, or null to load it when
/// needed. Returns the exit status.
int checkAndRun(const Request& request, const std::string& name, std::string text,
                bool run_after, const KernelEnvironment* env, Io& io,
                const ProgramRunner& runner = nullptr);

/// Whether diagnostics get colour (`--color`, NO_COLOR, a terminal).
bool wantColor(const Request& request, const Io& io);

}  // namespace kq::driver
