// USDT argument specs as gcc and clang write them in `.note.stapsdt` (x86-64).
#include "host/usdt.h"

#include <gtest/gtest.h>

namespace kq::host {
namespace {

using Kind = UsdtArg::Kind;

std::vector<UsdtArg> parse(std::string_view text) {
  auto symbol = [](std::string_view name) -> std::optional<uint64_t> {
    if (name == "counter") return 0x4010;
    return std::nullopt;
  };
  auto args = parseUsdtArgs(text, symbol);
  EXPECT_TRUE(args.ok()) << (args.ok() ? "" : args.error().message);
  return args.ok() ? args.take() : std::vector<UsdtArg>{};
}

std::string problem(std::string_view text) {
  auto args = parseUsdtArgs(text);
  return args.ok() ? "" : args.error().message;
}

TEST(UsdtArgs, RegistersByEveryWidthsName) {
  auto args = parse("-4@%eax 8@%rsi -2@%dx 1@%r9b 8@%r15 4@%r10d 1@%ah");
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[0].kind, Kind::Register);
  EXPECT_EQ(args[0].reg, "ax");
  EXPECT_EQ(args[0].size, 4u);
  EXPECT_TRUE(args[0].is_signed);
  EXPECT_EQ(args[1].reg, "si");
  EXPECT_FALSE(args[1].is_signed);
  EXPECT_EQ(args[2].reg, "dx");
  EXPECT_EQ(args[2].size, 2u);
  EXPECT_EQ(args[3].reg, "r9");
  EXPECT_EQ(args[4].reg, "r15");
  EXPECT_EQ(args[5].reg, "r10");
  EXPECT_EQ(args[6].reg, "ax");
  EXPECT_TRUE(args[6].high_byte);
}

TEST(UsdtArgs, ConstantsAndMemory) {
  auto args = parse("-4@$-5 8@$0x10 -4@-4(%rbp) 8@(%rsi) -4@(%rax,%rdi,4) 8@16(%rsp,%rcx) -8@counter(%rip) 8@counter+8(%rip)");
  ASSERT_EQ(args.size(), 8u);
  EXPECT_EQ(args[0].kind, Kind::Constant);
  EXPECT_EQ(args[0].value, -5);
  EXPECT_EQ(args[1].value, 16);
  EXPECT_EQ(args[2].kind, Kind::Memory);
  EXPECT_EQ(args[2].reg, "bp");
  EXPECT_EQ(args[2].value, -4);
  EXPECT_EQ(args[3].reg, "si");
  EXPECT_EQ(args[3].value, 0);
  EXPECT_EQ(args[4].reg, "ax");
  EXPECT_EQ(args[4].index, "di");
  EXPECT_EQ(args[4].scale, 4u);
  EXPECT_EQ(args[5].index, "cx");
  EXPECT_EQ(args[5].scale, 1u);
  EXPECT_EQ(args[5].value, 16);
  EXPECT_EQ(args[6].reg, "ip");
  EXPECT_EQ(args[6].value, 0x4010);
  EXPECT_EQ(args[7].value, 0x4018);
  EXPECT_TRUE(parse("").empty());
}

TEST(UsdtArgs, WhatCannotBeReadSaysWhy) {
  EXPECT_EQ(problem("3@%eax"), "cannot read USDT argument `3@%eax`: its size is not 1, 2, 4 or 8 bytes (negative when signed)");
  EXPECT_EQ(problem("4@%xmm0"), "cannot read USDT argument `4@%xmm0`: kq does not know register `%xmm0`");
  EXPECT_EQ(problem("8@8(%rip)"), "cannot read USDT argument `8@8(%rip)`: a %rip-relative number depends on the instruction's length");
  EXPECT_EQ(problem("8@missing(%rip)"), "cannot read USDT argument `8@missing(%rip)`: the binary has no symbol `missing`");
  EXPECT_EQ(problem("%eax"), "cannot read USDT argument `%eax`: no `@` after its size");
}

}  // namespace
}  // namespace kq::host
