// Where a command of kq reads and writes (the terminal and the disk, or a test's streams and
// files), and the readers of what the command line gives as text.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "driver/environment.h"

namespace kq::engine {
class Cancellation;
class Host;
}  // namespace kq::engine

namespace kq::driver {

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
  /// The machine queries run on (its kernel's features, symbols); null: each run makes one.
  engine::Host* host = nullptr;
  /// What stops a running query (the command line's stop signals, caught from before it
  /// compiles); null: each run catches them itself while it runs.
  engine::Cancellation* stop = nullptr;
  /// A stop signal while kq compiles, attaches or detaches ends kq then (the command line's
  /// one-shot runs; the REPL goes on instead), and on a terminal those waits are said.
  bool stops_end_phases = false;
};

/// Reads a file from disk (the default for Io::read_file).
std::optional<std::string> readFileFromDisk(const std::string& path, std::string& error);

/// The bytes of a `--buffer-size` (`256k`, `8M`, or a bare number of KiB): a power of two
/// from 4 KiB to 1 GiB, else nullopt.
std::optional<uint32_t> ringBufferBytes(const std::string& size);
/// The bytes of a size like `--max-size`'s (`1G`, `512M`, or a bare number of KiB): at
/// least 4 KiB, else nullopt.
std::optional<uint64_t> byteSize(const std::string& size);

}  // namespace kq::driver
