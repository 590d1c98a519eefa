// Running a checked program: compile to BPF, load, attach, print events until stopped.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/sema/sema.h"
#include "runtime/query_ends.h"
#include "tools/kq/cli.h"
#include "tools/kq/request.h"

namespace kq::cli {

/// Each query's `for` and `limit`, in the order of the script (the plan's query numbers).
std::vector<runtime::QueryLimits> queryLimits(const sema::CheckedProgram& checked);

/// -d as nanoseconds (0 without it), or nullopt after saying why it is not a duration.
std::optional<uint64_t> sessionDuration(const Request& request, Io& io);

/// Whether this process may load BPF programs; says why not.
bool canLoadPrograms(Io& io);

/// Returns the exit status.
int runProgram(const Request& request, const sema::CheckedProgram& checked,
               const SourceManager& sources, FileId file, const KernelEnvironment& env,
               Diagnostics& diags, bool color, Io& io);

}  // namespace kq::cli
