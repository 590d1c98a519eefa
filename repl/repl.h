// The interactive session: queries, declarations and commands, a line at a time, each
// query run by the engine in a process of its own (repl/job.h).
#pragma once

#include "driver/io.h"
#include "driver/request.h"

namespace kq::repl {

int runRepl(const driver::Request& request, driver::Io& io);

}  // namespace kq::repl
