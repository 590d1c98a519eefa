#include "host/syscall_numbers.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace kq::host {
namespace {

constexpr std::pair<std::string_view, uint32_t> kNumbers[] = {
#include "syscall_numbers.inc"
};

#if defined(__x86_64__)
// Events named after the kernel's function rather than the call, and calls newer than
// Debian 12's C library, by the numbers of arch/x86/entry/syscalls/syscall_64.tbl (an ABI:
// never renumbered), each checked against a 6.18 kernel's tracefs by making the call.
constexpr std::pair<std::string_view, uint32_t> kMore[] = {
    {"cachestat", 451}, {"fchmodat2", 452}, {"file_getattr", 468}, {"file_setattr", 469},
    {"futex_requeue", 456}, {"futex_wait", 455}, {"futex_wake", 454}, {"getxattrat", 464},
    {"listmount", 458}, {"listxattrat", 465}, {"lsm_get_self_attr", 459},
    {"lsm_list_modules", 461}, {"lsm_set_self_attr", 460}, {"mseal", 462}, {"newfstat", 5},
    {"newlstat", 6}, {"newstat", 4}, {"newuname", 63}, {"open_tree_attr", 467},
    {"removexattrat", 466}, {"sendfile64", 40}, {"setxattrat", 463}, {"statmount", 457},
    {"umount", 166}, {"uprobe", 336}, {"uretprobe", 335},
};
#endif

template <size_t N>
std::optional<uint32_t> find(const std::pair<std::string_view, uint32_t> (&table)[N], std::string_view name) {
  auto it = std::lower_bound(std::begin(table), std::end(table), name,
                             [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it == std::end(table) || it->first != name) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<uint32_t> syscallNumber(std::string_view name) {
  if (auto nr = find(kNumbers, name)) return nr;
#if defined(__x86_64__)
  return find(kMore, name);
#else
  return std::nullopt;
#endif
}

}  // namespace kq::host
