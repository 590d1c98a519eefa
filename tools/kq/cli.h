// The `kq` command line: parses arguments and runs one command. Kept apart from main() so
// tests run kq in-process with their own streams and files.
#pragma once

#include <string>
#include <vector>

#include "driver/io.h"

namespace kq::cli {

/// Runs kq with `args` (without the program name). Returns the exit status: 0 on success,
/// 1 when the input has errors or a command fails, 2 when the command line is wrong.
int run(const std::vector<std::string>& args, driver::Io& io);

}  // namespace kq::cli
