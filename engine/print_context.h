// Everything turning a record into values reads of the machine, injected: names of kernel
// and user addresses, the kernel's types (typed dumps, enumerators), files (`cat`), and the
// clock that turns kernel times into wall-clock times. A live session passes the Host's; a
// test (or a replay) passes its own, so the same bytes decode the same anywhere.
#pragma once

#include <cstdint>
#include <string>

namespace kq::runtime {
class TypeDumper;
}

namespace kq::engine {

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;
  /// `ip_send_skb+0x1a`, or the address in hex.
  virtual std::string kernel(uint64_t address) = 0;
  /// `main+0x1a` in process `pid`, or the address in hex.
  virtual std::string user(uint32_t pid, uint64_t address) = 0;
  /// A new event is being decoded (a process's identity may be checked again).
  virtual void nextEvent() {}
};

class FileReader {
 public:
  virtual ~FileReader() = default;
  /// `cat(path)`: the file's text as it prints (runtime/printed.h fileText's rules).
  virtual std::string text(const std::string& path) = 0;
};

struct PrintContext {
  Symbolizer& symbols;
  runtime::TypeDumper& types;
  FileReader& files;
  /// CLOCK_REALTIME - CLOCK_MONOTONIC when the session started: kernel times to wall time.
  int64_t boot_offset_ns = 0;
  /// A stack that is a table's key names each frame's function (`ip_rcv`), and stacks alike
  /// in those are one group; with this (`--stack-offsets`), each frame keeps its offset
  /// (`ip_rcv+0x1a`), as a stack beneath an event always does.
  bool key_stack_offsets = false;
  /// The process a user stack that is a table's key was taken in (a key has no pid of its
  /// own): -p's, else -c's command; 0, none (its frames are addresses).
  uint32_t key_pid = 0;
};

}  // namespace kq::engine
