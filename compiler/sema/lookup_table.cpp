#include "compiler/sema/lookup_table.h"

#include "compiler/btf/btf.h"

namespace kq::sema {

std::vector<int64_t> LookupTable::keysNamed(std::string_view name, bool glob) const {
  std::vector<int64_t> keys;
  for (const auto& [key, value] : names) {
    if (glob ? btf::globMatch(name, value) : name == value) keys.push_back(key);
  }
  return keys;
}

std::vector<std::string_view> LookupTable::allNames() const {
  std::vector<std::string_view> out;
  for (const auto& [key, value] : names) out.push_back(value);
  for (const auto& [key, value] : numbers) out.push_back(key);
  return out;
}

}  // namespace kq::sema
