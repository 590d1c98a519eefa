#include "runtime/symbols.h"

#include "kernel/kallsyms.h"

#include <algorithm>

#include <fmt/format.h>

namespace kq::runtime {
std::string KernelSymbols::name(uint64_t address) {
  if (!loaded_) {
    loaded_ = true;
    symbols_.clear();
    source_([&](uint64_t at, std::string_view symbol) {
      if (at != 0) symbols_.push_back({at, std::string(symbol)});
    });
    std::sort(symbols_.begin(), symbols_.end(),
              [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  }
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return fmt::format("0x{:x}", address);
  --it;
  uint64_t offset = address - it->address;
  if (offset > (1u << 20)) return fmt::format("0x{:x}", address);
  return offset ? fmt::format("{}+0x{:x}", it->name, offset) : it->name;
}

namespace {

KernelSymbols& runningKernelSymbols() {
  static KernelSymbols symbols(kernel::forEachKernelTextSymbol);
  return symbols;
}

}  // namespace

void refreshKernelSymbols() { runningKernelSymbols().refresh(); }

std::string kernelSymbol(uint64_t address) { return runningKernelSymbols().name(address); }

std::string errnoName(int64_t value) {
  static const char* names[] = {
      nullptr,   "EPERM",   "ENOENT", "ESRCH",   "EINTR",  "EIO",     "ENXIO",  "E2BIG",
      "ENOEXEC", "EBADF",   "ECHILD", "EAGAIN",  "ENOMEM", "EACCES",  "EFAULT", "ENOTBLK",
      "EBUSY",   "EEXIST",  "EXDEV",  "ENODEV",  "ENOTDIR", "EISDIR", "EINVAL", "ENFILE",
      "EMFILE",  "ENOTTY",  "ETXTBSY", "EFBIG",  "ENOSPC", "ESPIPE",  "EROFS",  "EMLINK",
      "EPIPE",   "EDOM",    "ERANGE",
  };
  int64_t n = value < 0 ? -value : value;
  if (n > 0 && n < static_cast<int64_t>(sizeof names / sizeof *names)) {
    return value < 0 ? fmt::format("-{}", names[n]) : names[n];
  }
  switch (n) {
    case 38: return value < 0 ? "-ENOSYS" : "ENOSYS";
    case 95: return value < 0 ? "-EOPNOTSUPP" : "EOPNOTSUPP";
    case 104: return value < 0 ? "-ECONNRESET" : "ECONNRESET";
    case 110: return value < 0 ? "-ETIMEDOUT" : "ETIMEDOUT";
    case 111: return value < 0 ? "-ECONNREFUSED" : "ECONNREFUSED";
    default: return std::to_string(value);
  }
}

}  // namespace kq::runtime
