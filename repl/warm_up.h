// The work each query's process would otherwise do again, done once in the interactive
// session before its first prompt so that every query forked from it inherits the result.
#pragma once

#include "driver/environment.h"
#include "driver/request.h"

namespace kq::engine {
class Host;
}

namespace kq::repl {

/// Finds out which attach methods and helpers the running kernel offers (loading tiny
/// programs, reading its BTF) and sets LLVM's BPF target up by compiling a small query
/// (nothing is loaded). Does nothing without the privileges to load programs, or against
/// another kernel's BTF (`--btf`).
void warmUp(const driver::Request& request, driver::KernelEnvironment& env, engine::Host& host);

}  // namespace kq::repl
