#include "host/kernel_symbols.h"

#include <gtest/gtest.h>

namespace kq::host {
namespace {

TEST(KernelSymbols, NamesAddressesAndSeesModulesLoadedSinceARefresh) {
  bool module_loaded = false;
  int reads = 0;
  KernelSymbols symbols([&](const std::function<void(uint64_t, std::string_view)>& visit) {
    ++reads;
    visit(0xffffffff81000000, "ip_send_skb");
    if (module_loaded) visit(0xffffffffc0000000, "nf_hook_slow");
    return true;
  });
  EXPECT_EQ(symbols.name(0xffffffff81000010), "ip_send_skb+0x10");
  EXPECT_EQ(symbols.name(0xffffffffc0000000), "0xffffffffc0000000");
  module_loaded = true;
  EXPECT_EQ(symbols.name(0xffffffffc0000000), "0xffffffffc0000000");  // not read again
  EXPECT_EQ(reads, 1);
  symbols.refresh();
  EXPECT_EQ(symbols.name(0xffffffffc0000004), "nf_hook_slow+0x4");
  EXPECT_EQ(reads, 2);
}

}  // namespace
}  // namespace kq::host
