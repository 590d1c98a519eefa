// Kernel addresses to names, from /proc/kallsyms (read on first use).
#pragma once

#include <cstdint>
#include <string>

namespace kq::runtime {

/// `ip_send_skb+0x1a`, or the address in hex when no symbol covers it.
std::string kernelSymbol(uint64_t address);

/// `ENOENT` for -2 (or 2), or the number.
std::string errnoName(int64_t value);

}  // namespace kq::runtime
