#include "host/kallsyms.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace kq::host {
namespace {

std::vector<std::pair<uint64_t, std::string>> textSymbols(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::pair<uint64_t, std::string>> out;
  forEachTextSymbol(in, [&](uint64_t address, std::string_view name) {
    out.emplace_back(address, std::string(name));
  });
  return out;
}

TEST(Kallsyms, KeepsTextSymbolsWithAndWithoutModules) {
  auto symbols = textSymbols(
      "ffffffff8205dbd0 T ip_send_skb\n"
      "ffffffff8205dc00 D some_data\n"
      "ffffffffc0a01000 t nf_hook_slow\t[nf_tables]\n"
      "ffffffff81000000 W weak_symbol\n");
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0], std::make_pair(uint64_t{0xffffffff8205dbd0}, std::string("ip_send_skb")));
  EXPECT_EQ(symbols[1], std::make_pair(uint64_t{0xffffffffc0a01000}, std::string("nf_hook_slow")));
}

TEST(Kallsyms, HiddenAddressesAreZero) {
  auto symbols = textSymbols("0000000000000000 T ip_send_skb\n");
  ASSERT_EQ(symbols.size(), 1u);
  EXPECT_EQ(symbols[0].first, 0u);
}

TEST(Kallsyms, MalformedLinesAreSkipped) {
  auto symbols = textSymbols(
      "\n"
      "garbage\n"
      "ffffffff8205dbd0 T\n"
      "zzzz T not_hex\n"
      "ffffffff8205dbd0 TT two_letter_kind\n"
      "ffff T short_address_is_fine\n");
  ASSERT_EQ(symbols.size(), 1u);
  EXPECT_EQ(symbols[0].second, "short_address_is_fine");
}

TEST(Kallsyms, EverySymbolOfEveryKindInOrder) {
  std::istringstream in(
      "ffffffff8205dbd0 T ip_send_skb\n"
      "ffffffff83a0f940 D init_task\n"
      "ffffffff83805000 B jiffies\n"
      "ffffffffc0a01000 t nf_hook_slow\t[nf_tables]\n"
      "ffffffff8205dbd0 TT two_letter_kind\n");
  std::vector<std::pair<uint64_t, std::string>> symbols;
  forEachSymbol(in, [&](uint64_t address, std::string_view name) {
    symbols.emplace_back(address, std::string(name));
  });
  ASSERT_EQ(symbols.size(), 4u);
  EXPECT_EQ(symbols[1], std::make_pair(uint64_t{0xffffffff83a0f940}, std::string("init_task")));
  EXPECT_EQ(symbols[2].second, "jiffies");
  EXPECT_EQ(symbols[3].second, "nf_hook_slow");
}

}  // namespace
}  // namespace kq::host
