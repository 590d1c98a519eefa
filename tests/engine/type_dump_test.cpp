// runtime::TypeDumper over a small BTF built in memory (tests/engine/fake_host.h's struct
// conn): a struct's known bytes as C (ksnoop-style) and as JSON, enumerators by name.
#include <gtest/gtest.h>

#include "runtime/type_dump.h"
#include "tests/engine/fake_host.h"
#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;

plan::FieldLayout conn(uint32_t size = 48) {
  plan::FieldLayout f = field("c", FieldKind::Record, 0, size);
  f.type_name = "struct conn";
  return f;
}

/// A struct conn with every member set: id -7, flags 0x80000001, name "eth0", local
/// 127.0.0.1 (as the kernel keeps it, network order) port 8080, CONN_CLOSED, a peer, delta.
Bytes fullConn() {
  return Bytes(48).u32(0, uint32_t(-7)).u32(4, 0x80000001).text(8, "eth0").u32(16, 0x0100007f).u32(20, 8080)
      .u32(24, 2).u64(32, 0xffff888000001000).u64(40, uint64_t(-1) << 40);
}

class SmallKernelDumps : public ::testing::Test {
 protected:
  FakeHost host;
};

TEST_F(SmallKernelDumps, AStructAsC) {
  EXPECT_EQ(host.types().recordText(conn(), fullConn().data().data()),
            "(struct conn){\n"
            "    .id = (int)-7,\n"
            "    .flags = (unsigned int)2147483649,\n"
            "    .name = (char[8])\"eth0\",\n"
            "    .local = (struct endpoint){\n"
            "        .addr = (unsigned int)16777343,\n"
            "        .port = (short unsigned int)8080,\n"
            "    },\n"
            "    .state = (enum conn_state)CONN_CLOSED,\n"
            "    .peer = (struct endpoint *)0xffff888000001000,\n"
            "    .delta = (long int)-1099511627776,\n"
            "}");
}

TEST_F(SmallKernelDumps, AStructOnOneLine) {
  // --structs compact: its own members, no casts, a nested struct that holds something as {…}.
  EXPECT_EQ(host.types().recordLine(conn(), fullConn().data().data()),
            "(struct conn){.id = -7, .flags = 2147483649, .name = \"eth0\", .local = {…}, .state = CONN_CLOSED, "
            ".peer = 0xffff888000001000, .delta = -1099511627776}");
  // Zeroes left out, a nested struct of zeroes too; the capture's end said.
  EXPECT_EQ(host.types().recordLine(conn(), Bytes(48).u32(4, 1).data().data()), "(struct conn){.flags = 1}");
  EXPECT_EQ(host.types().recordLine(conn(24), fullConn().data().data()),
            "(struct conn){.id = -7, .flags = 2147483649, .name = \"eth0\", .local = {…}, "
            "/* 24 more bytes not captured */}");
}

TEST_F(SmallKernelDumps, AStructAsJson) {
  EXPECT_EQ(host.types().recordJson(conn(), fullConn().data().data()).dump(),
            R"({"id":-7,"flags":2147483649,"name":"eth0","local":{"addr":16777343,"port":8080},)"
            R"("state":"CONN_CLOSED","peer":"0xffff888000001000","delta":-1099511627776})");
}

TEST_F(SmallKernelDumps, ZeroMembersAreLeftOutOfTheCButNotOfTheJson) {
  // A name of all 8 bytes has no NUL: all of it shows.
  Bytes bytes = Bytes(48).u32(20, 53).text(8, "abcdefgh");
  EXPECT_EQ(host.types().recordText(conn(), bytes.data().data()),
            "(struct conn){\n"
            "    .name = (char[8])\"abcdefgh\",\n"
            "    .local = (struct endpoint){\n"
            "        .port = (short unsigned int)53,\n"
            "    },\n"
            "}");
  EXPECT_EQ(host.types().recordJson(conn(), bytes.data().data()).dump(),
            R"({"id":0,"flags":0,"name":"abcdefgh","local":{"addr":0,"port":53},"state":"CONN_IDLE",)"
            R"("peer":"0x0","delta":0})");
}

TEST_F(SmallKernelDumps, AStructCapturedInPartSaysHowMuch) {
  // The first 24 bytes: up to `local`, not `state` and after.
  Bytes bytes = fullConn();
  EXPECT_EQ(host.types().recordText(conn(24), bytes.data().data()),
            "(struct conn){\n"
            "    .id = (int)-7,\n"
            "    .flags = (unsigned int)2147483649,\n"
            "    .name = (char[8])\"eth0\",\n"
            "    .local = (struct endpoint){\n"
            "        .addr = (unsigned int)16777343,\n"
            "        .port = (short unsigned int)8080,\n"
            "    },\n"
            "    /* 24 more bytes not captured */\n"
            "}");
  EXPECT_EQ(host.types().recordJson(conn(24), bytes.data().data()).dump(),
            R"({"id":-7,"flags":2147483649,"name":"eth0","local":{"addr":16777343,"port":8080}})");
}

TEST_F(SmallKernelDumps, ANestedStructByItself) {
  plan::FieldLayout endpoint = field("e", FieldKind::Record, 0, 8);
  endpoint.type_name = "struct endpoint";
  Bytes bytes = Bytes(8).u32(0, 0x0a000001).u32(4, 22);
  EXPECT_EQ(host.types().recordText(endpoint, bytes.data().data()),
            "(struct endpoint){\n"
            "    .addr = (unsigned int)167772161,\n"
            "    .port = (short unsigned int)22,\n"
            "}");
  EXPECT_EQ(host.types().recordJson(endpoint, bytes.data().data()).dump(), R"({"addr":167772161,"port":22})");
}

TEST_F(SmallKernelDumps, BitfieldsByTheirTypes) {
  plan::FieldLayout bits = field("b", FieldKind::Record, 0, 8);
  bits.type_name = "struct bits";
  // kind 5, credit -2 (12 bits), on, CONN_CLOSED.
  uint32_t word = 5u | (0xffeu << 3) | (1u << 15) | (2u << 16);
  Bytes bytes = Bytes(8).u32(0, word);
  // An integer bitfield shows its bits in hex, as libbpf does; JSON, its value.
  EXPECT_EQ(host.types().recordText(bits, bytes.data().data()),
            "(struct bits){\n"
            "    .kind = (unsigned int)0x5,\n"
            "    .credit = (int)0xffe,\n"
            "    .on = (_Bool)0x1,\n"
            "    .st = (enum conn_state)CONN_CLOSED,\n"
            "}");
  EXPECT_EQ(host.types().recordJson(bits, bytes.data().data()).dump(),
            R"({"kind":5,"credit":-2,"on":true,"st":"CONN_CLOSED"})");
}

TEST_F(SmallKernelDumps, EnumeratorsByName) {
  plan::FieldLayout state = field("s", FieldKind::Enum, 0);
  state.type_name = "enum conn_state";
  EXPECT_EQ(host.types().enumText(state, 0), "CONN_IDLE");
  EXPECT_EQ(host.types().enumText(state, 2), "CONN_CLOSED");
  EXPECT_EQ(host.types().enumText(state, -1), "-1");
  plan::FieldLayout reason = field("r", FieldKind::Enum, 0);
  reason.type_name = "enum skb_drop_reason";
  EXPECT_EQ(host.types().enumText(reason, 3), "SKB_DROP_REASON_NO_SOCKET");
}

TEST_F(SmallKernelDumps, WithoutBtfNothingIsDumped) {
  runtime::TypeDumper none(nullptr);
  plan::FieldLayout state = field("s", FieldKind::Enum, 0);
  state.type_name = "enum conn_state";
  Bytes bytes = fullConn();
  EXPECT_EQ(none.recordText(conn(), bytes.data().data()), "(no type `struct conn` in this kernel)");
  EXPECT_EQ(none.recordText(field("c", FieldKind::Record, 0, 48), bytes.data().data()), "(no BTF to show it with)");
  EXPECT_TRUE(none.recordJson(conn(), bytes.data().data()).is_null());
  EXPECT_EQ(none.enumText(state, 2), "2");
}

TEST_F(SmallKernelDumps, ATypeByIdWhenTheLayoutNamesNone) {
  // Anonymous types have only their id, trusted when the ids are the running kernel's.
  plan::FieldLayout anonymous = field("c", FieldKind::Record, 0, 48);
  anonymous.btf_id = host.typeId("struct conn");
  EXPECT_EQ(host.types().recordJson(anonymous, fullConn().data().data())["state"], "CONN_CLOSED");
}

}  // namespace
}  // namespace kq::engine::testing
