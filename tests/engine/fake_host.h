// A machine for engine tests: kernel and user symbols, files and kernel types as the test
// says, and a UTC clock, so that recorded bytes print the same anywhere, without root.
// The kernel types are a small BTF built in memory with libbpf's btf__add_*:
//
//   enum conn_state { CONN_IDLE, CONN_OPEN, CONN_CLOSED };             /* 4 bytes */
//   enum skb_drop_reason { SKB_NOT_DROPPED_YET, SKB_DROP_REASON_NOT_SPECIFIED = 2,
//                          SKB_DROP_REASON_NO_SOCKET };
//   struct endpoint { unsigned int addr; short unsigned int port; };   /* 8 bytes */
//   struct bits {                                                      /* 8 bytes */
//     unsigned int kind:3; int credit:12; _Bool on:1; enum conn_state st:2;
//   };
//   struct conn {                                                      /* 48 bytes */
//     int id;                    /* 0 */
//     unsigned int flags;        /* 4 */
//     char name[8];              /* 8 */
//     struct endpoint local;     /* 16 */
//     enum conn_state state;     /* 24 */
//     struct endpoint *peer;     /* 32 */
//     long int delta;            /* 40 */
//   };
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/print_context.h"
#include "runtime/kernel_types.h"
#include "runtime/type_dump.h"

namespace kq::host {
class BtfView;
}

namespace kq::engine::testing {

/// 2024-01-02 03:00:00 UTC, in ns since the epoch: kernel time 0 as wall-clock time.
inline constexpr int64_t kBootOffsetNs = 1'704'164'400'000'000'000;

class FakeHost : public Symbolizer, public FileReader {
 public:
  /// Sets the process's time zone to UTC (times print as local times).
  FakeHost();
  ~FakeHost() override;
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  /// Names of addresses; an address without one prints in hex, as the host's do.
  std::map<uint64_t, std::string> kernel_symbols;
  std::map<uint64_t, std::string> user_symbols;  // for any process
  /// `cat`'s files by path; others print as unreadable.
  std::map<std::string, std::string> files;
  /// How many events the decoder said it started.
  int events_started = 0;

  PrintContext& context() { return *context_; }
  runtime::TypeDumper& types() { return *dumper_; }
  /// A new TypeDumper, as each engine session has one: it keeps each field's type by the
  /// field's address, so a test showing several layouts starts a session for each.
  void beginSession();
  /// The BTF id of a type of the small kernel, spelled as the compiler does (`struct conn`).
  uint32_t typeId(const std::string& spelling) const;

  std::string kernel(uint64_t address) override;
  std::string user(uint32_t pid, uint64_t address) override;
  void nextEvent() override { ++events_started; }
  std::string text(const std::string& path) override;

 private:
  std::unique_ptr<host::BtfView> btf_;
  std::unique_ptr<runtime::KernelTypes> kernel_types_;
  std::unique_ptr<runtime::TypeDumper> dumper_;
  std::unique_ptr<PrintContext> context_;
};

}  // namespace kq::engine::testing
