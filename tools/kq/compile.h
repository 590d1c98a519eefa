// One piece of kq text through the compiler: parse, check against the kernel, and (when
// asked) compile and run. Shared by the command line and the REPL.
#pragma once

#include <string>

#include "tools/kq/cli.h"
#include "tools/kq/request.h"

namespace kq::cli {

/// Checks `text` (named `name` in diagnostics) and, if `run_after`, runs it; honours
/// `request.dump`. `env` is the kernel to check against, or null to load it when needed.
/// Returns the exit status.
int checkAndRun(const Request& request, const std::string& name, std::string text,
                bool run_after, const KernelEnvironment* env, Io& io);

/// Whether diagnostics get colour (`--color`, NO_COLOR, a terminal).
bool wantColor(const Request& request, const Io& io);

}  // namespace kq::cli
