// `kq run FILE`: an object written by `kq build`, loaded and run with the plan in it; no
// parsing, checking or code generation.
#pragma once

#include "driver/io.h"
#include "driver/request.h"

namespace kq::driver {

/// Runs the object `request.input` names as a script run directly would run. Returns the
/// exit status.
int runObject(const Request& request, Io& io);

}  // namespace kq::driver
