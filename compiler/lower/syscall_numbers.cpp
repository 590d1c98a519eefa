#include "compiler/lower/syscall_numbers.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace kq::lower {
namespace {

constexpr std::pair<std::string_view, uint32_t> kNumbers[] = {
#include "syscall_numbers.inc"
};

}  // namespace

std::optional<uint32_t> syscallNumber(std::string_view name) {
  auto it = std::lower_bound(std::begin(kNumbers), std::end(kNumbers), name,
                             [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it == std::end(kNumbers) || it->first != name) return std::nullopt;
  return it->second;
}

}  // namespace kq::lower
