#include "runtime/dump_zeroes.h"

#include <gtest/gtest.h>

namespace kq::runtime {
namespace {

TEST(DumpZeroes, KeepsANestedStructWhoseFirstMembersAreZero) {
  // libbpf 1.1's emit_zeroes = false dropped `.common` whole: its first member is zero.
  std::string dump =
      "(struct sock){\n"
      "    .common = (struct sock_common){\n"
      "        (union){\n"
      "            .addrpair = (__addrpair)0,\n"
      "            (struct){\n"
      "                .daddr = (__be32)0,\n"
      "            },\n"
      "        },\n"
      "        .family = (short unsigned int)2,\n"
      "        .prot = (struct proto *)0x0,\n"
      "        .hashes = (__u16[2])[\n"
      "            0,\n"
      "            7,\n"
      "        ],\n"
      "        .zeroes = (__u16[2])[\n"
      "            0,\n"
      "            0,\n"
      "        ],\n"
      "    },\n"
      "    .flag = (bool)false,\n"
      "    .rcvbuf = (int)-1,\n"
      "}";
  EXPECT_EQ(withoutZeroes(dump),
            "(struct sock){\n"
            "    .common = (struct sock_common){\n"
            "        .family = (short unsigned int)2,\n"
            "        .hashes = (__u16[2])[\n"
            "            0,\n"
            "            7,\n"
            "        ],\n"
            "    },\n"
            "    .rcvbuf = (int)-1,\n"
            "}");
}

TEST(DumpZeroes, AZeroBitfieldLibbpfPrintsWithoutAValueIsLeftOut) {
  EXPECT_EQ(withoutZeroes("(struct sock){\n    .sk_shutdown = (u8)    .sk_lingertime = (long)5,\n}"),
            "(struct sock){\n    .sk_lingertime = (long)5,\n}");
}

TEST(DumpZeroes, AnAllZeroStructStaysAsItsType) {
  EXPECT_EQ(withoutZeroes("(struct x){\n    .a = (int)0,\n}"), "(struct x){\n}");
}

}  // namespace
}  // namespace kq::runtime
