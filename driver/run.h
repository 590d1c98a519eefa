// Running a checked program: compile to BPF, load, attach, print events until stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/lower/lower.h"
#include "compiler/sema/sema.h"
#include "runtime/query_ends.h"
#include "driver/io.h"
#include "driver/request.h"
#include "engine/run_hooks.h"

namespace kq::driver {

/// -d as nanoseconds (0 without it), or nullopt after saying why it is not a duration.
std::optional<uint64_t> sessionDuration(const Request& request, Io& io);

/// Whether this process may load BPF programs; says why not.
bool canLoadPrograms(Io& io);

using engine::RunHooks;

/// Compiles `checked`, rendering the diagnostics (and the error, if it failed) on io.err.
std::optional<lower::CompiledProgram> lowerAndReport(const sema::CheckedProgram& checked,
                                                     const btf::Btf& btf, const SourceManager& sources,
                                                     FileId file, const lower::LowerOptions& options,
                                                     Diagnostics& diags, bool color, Io& io);

/// Returns the exit status. `env` is what `checked` was checked against; when nothing after
/// this run needs it (a one-shot command, not the REPL), `disposable` is the same
/// environment, whose BTF is freed once compiled (the runtime reads its own as needed).
/// `checked` then refers to freed types: only its syntax is read after that.
int runProgram(const Request& request, const sema::CheckedProgram& checked,
               const SourceManager& sources, FileId file, const KernelEnvironment& env,
               KernelEnvironment* disposable, Diagnostics& diags, bool color, Io& io,
               const RunHooks& hooks = {});

}  // namespace kq::driver
