// The kernel's text symbols as /proc/kallsyms lists them. Both phases read it: the
// compiler to say whether a function can be probed, the runtime to name addresses; so it
// lives below both (kernel/: what kq reads of the running kernel, for every phase).
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <string_view>

namespace kq::host {

/// Calls `visit(address, name)` for every text symbol (`T` or `t`) in `in`, which holds
/// lines such as "ffffffff8205dbd0 T ip_send_skb" or "... t name\t[module]". The address
/// is 0 when the reader may not see addresses (kptr_restrict).
void forEachTextSymbol(std::istream& in,
                       const std::function<void(uint64_t address, std::string_view name)>& visit);

/// The same over /proc/kallsyms; false when it cannot be read.
bool forEachKernelTextSymbol(
    const std::function<void(uint64_t address, std::string_view name)>& visit);

/// Calls `visit(address, name)` for every symbol in `in`, of any kind (functions, data,
/// read-only data, BSS), in the order listed: vmlinux's, then modules'.
void forEachSymbol(std::istream& in,
                   const std::function<void(uint64_t address, std::string_view name)>& visit);

/// The same over /proc/kallsyms; false when it cannot be read.
bool forEachKernelSymbol(const std::function<void(uint64_t address, std::string_view name)>& visit);

}  // namespace kq::host
