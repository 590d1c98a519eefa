// What kq knows of the machine it runs on, owned once by a front end and shared by every
// query it runs: the kernel's features (probed on first need, then remembered), the
// kernel's and processes' symbols (re-read as modules load and programs exec; bounded),
// files, and the clock. Nothing here is a process global: two Hosts (a test's, a replay's)
// do not see each other.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/print_context.h"
#include "host/kernel_symbols.h"
#include "host/user_symbols.h"
#include "runtime/kernel_features.h"

namespace kq::engine {

struct HostOptions {
  /// Where the kernel's text symbols come from (null: /proc/kallsyms).
  host::SymbolSource kernel_symbols;
  std::string proc = "/proc";
  /// What the kernel offers (null: the running kernel, probed on first need).
  std::unique_ptr<runtime::KernelFeatures> features;
};

class Host : public Symbolizer, public FileReader {
 public:
  explicit Host(HostOptions options = {});
  ~Host() override;
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  runtime::KernelFeatures& features() { return *features_; }

  /// A session begins: kernel symbols are read again when next needed (modules come and
  /// go), and the offset of the kernel's clock from the wall's is measured again.
  void beginSession();
  /// CLOCK_REALTIME - CLOCK_MONOTONIC, as last measured.
  int64_t bootOffset() const { return boot_offset_ns_; }

  // Symbolizer
  std::string kernel(uint64_t address) override { return kernel_symbols_.name(address); }
  std::string user(uint32_t pid, uint64_t address) override { return user_symbols_.name(pid, address); }
  void nextEvent() override { user_symbols_.nextEvent(); }
  // FileReader
  std::string text(const std::string& path) override;

  const host::UserSymbols& userSymbols() const { return user_symbols_; }

 private:
  std::unique_ptr<runtime::KernelFeatures> features_;
  host::KernelSymbols kernel_symbols_;
  host::UserSymbols user_symbols_;
  int64_t boot_offset_ns_ = 0;
};

/// CLOCK_MONOTONIC (or `clock`) now, in nanoseconds.
int64_t nowNs(int clock = 1 /* CLOCK_MONOTONIC */);

}  // namespace kq::engine
