#include "engine/host.h"

#include <ctime>

#include "runtime/printed.h"

namespace kq::engine {

int64_t nowNs(int clock) {
  timespec ts{};
  clock_gettime(static_cast<clockid_t>(clock), &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Host::Host(HostOptions options)
    : features_(options.features ? std::move(options.features) : runtime::probeRunningKernel()),
      kernel_symbols_(options.kernel_symbols ? std::move(options.kernel_symbols) : host::kallsymsSource()),
      user_symbols_(256, 64, options.proc) {
  boot_offset_ns_ = nowNs(CLOCK_REALTIME) - nowNs(CLOCK_MONOTONIC);
}

Host::~Host() = default;

void Host::beginSession() {
  kernel_symbols_.refresh();
  boot_offset_ns_ = nowNs(CLOCK_REALTIME) - nowNs(CLOCK_MONOTONIC);
}

std::string Host::text(const std::string& path) { return runtime::fileText(path); }

}  // namespace kq::engine
