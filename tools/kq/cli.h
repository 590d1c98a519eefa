// The `kq` command line: parses arguments and runs one command. Kept apart from main() so
// tests run kq in-process with their own streams and files.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/kq/environment.h"

namespace kq::cli {

/// Where a run of kq reads and writes. The real command uses the terminal and the disk.
struct Io {
  std::ostream& out;
  std::ostream& err;
  /// Returns the file's contents, or nullopt with `error` set to why it cannot be read.
  std::function<std::optional<std::string>(const std::string& path, std::string& error)> read_file;
  /// Whether `err` is a terminal (for `--color=auto`).
  bool err_is_terminal = false;
  /// Loads the kernel to check against (`btf_path` empty: the running one). Tests give a
  /// fake kernel here.
  std::function<Result<KernelEnvironment>(const std::string& btf_path)> load_kernel =
      loadKernelEnvironment;
};

/// Reads a file from disk (the default for Io::read_file).
std::optional<std::string> readFileFromDisk(const std::string& path, std::string& error);

/// The bytes of a `--buffer-size` (`256k`, `8M`, or a bare number of KiB): a power of two
/// from 4 KiB to 1 GiB, else nullopt.
std::optional<uint32_t> ringBufferBytes(const std::string& size);

/// Runs kq with `args` (without the program name). Returns the exit status: 0 on success,
/// 1 when the input has errors or a command fails, 2 when the command line is wrong.
int run(const std::vector<std::string>& args, Io& io);

}  // namespace kq::cli
