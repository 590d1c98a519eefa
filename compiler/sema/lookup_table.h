// Lookup tables: names for numbers (`{0: "CAP_CHOWN", 1: "CAP_DAC_OVERRIDE"}`, or the
// enumerators `enum_name(x, "TCP_")` finds in BTF) and numbers for names (`{"read": 0}`).
// Sema builds them; a lookup of a name prints through the record field's table (no kernel
// cost) and compiles into the kernel only where a string is compared or needed there.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kq::sema {

struct LookupTable {
  /// Integer keys: the name of each, in key order.
  std::map<int64_t, std::string> names;
  /// String keys: the number of each.
  std::map<std::string, int64_t, std::less<>> numbers;
  /// Where the names come from, for `kq --dump types`: "" for a literal, or the enum
  /// `enum_name` chose (`an anonymous enum (TCP_ESTABLISHED = 1, ...)`).
  std::string origin;

  bool stringKeys() const { return !numbers.empty(); }
  /// The keys whose names are `name` or, with `glob`, match it (`*`, `?`), in key order.
  std::vector<int64_t> keysNamed(std::string_view name, bool glob) const;
  /// Every name, for did-you-mean hints (values of a table of names, keys of numbers).
  std::vector<std::string_view> allNames() const;
};

}  // namespace kq::sema
