// Running a checked program: compile to BPF, load, attach, print events until stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "compiler/sema/sema.h"
#include "tools/kq/cli.h"
#include "tools/kq/request.h"

namespace kq::cli {

/// What a run tells whoever watches it (the interactive session's jobs).
struct RunHooks {
  /// Called once the programs are attached, before the first event is read.
  std::function<void()> attached;
  /// Counts the events printed so far.
  std::atomic<uint64_t>* events = nullptr;
};

/// Returns the exit status.
int runProgram(const Request& request, const sema::CheckedProgram& checked,
               const SourceManager& sources, FileId file, const KernelEnvironment& env,
               Diagnostics& diags, bool color, Io& io, const RunHooks& hooks = {});

}  // namespace kq::cli
