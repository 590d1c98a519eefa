// `kq build`: a checked program compiled into an object file instead of run.
#pragma once

#include "compiler/sema/sema.h"
#include "driver/io.h"
#include "driver/request.h"

namespace kq::driver {

/// Writes the object `request.object_path` names: with `--ipft`, the script's one
/// extension for ipftrace2. Returns the exit status.
int buildObject(const Request& request, const sema::CheckedProgram& checked,
                const SourceManager& sources, FileId file, const KernelEnvironment& env,
                Diagnostics& diags, bool color, Io& io);

/// `kq build --ipft FILE.c`: an ipftrace2 C extension (build_c.cpp).
bool isCExtension(const Request& request);
int buildCExtension(const Request& request, Io& io);

}  // namespace kq::driver
