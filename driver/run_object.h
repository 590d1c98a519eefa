// `kq run FILE`: an object written by `kq build`, loaded and run with the plan in it; no
// parsing, checking or code generation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/io.h"
#include "driver/request.h"
#include "plan/portable_plan.h"

namespace kq::driver {

/// An object `kq build` wrote: its bytes and the plan in its `.kq.plan` section.
struct BuiltObject {
  std::vector<char> elf;
  plan::PortablePlan plan;
};

/// The object at `path`, read and its plan checked against its programs and maps; or
/// nullopt with `error` saying why (`*not_built` when the file is no object of `kq build`'s).
/// A FIFO, a device or a directory is refused at once.
std::optional<BuiltObject> readBuiltObject(const std::string& path, std::string& error, bool* not_built = nullptr);

/// Why the object of `plan` cannot run on this machine, or empty: built for another
/// architecture, or a classic tracepoint whose record is not laid out here as it was there.
std::string cannotRunHere(const plan::PortablePlan& plan);

/// `note: `PATH` was built by kq V against K; this is L`, for a failure to run it here.
std::string builtAgainstNote(const std::string& path, const plan::PortablePlan& plan);

/// Runs the object `request.input` names as a script run directly would run. Returns the
/// exit status.
int runObject(const Request& request, Io& io);

}  // namespace kq::driver
