// Typed dumps (TypeDumper: C text and JSON from one walk) of values of types built in memory
// with libbpf's btf__add_*, as the kernel's BTF has them (pahole's `char` has no CHAR
// encoding), and of bytes cut short as kq captures them.
#include "host/btf_file.h"
#include "runtime/type_dump.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/kernel_types.h"

namespace kq::runtime {
namespace {

using Json = nlohmann::ordered_json;

class TypeDumps : public ::testing::Test {
 protected:
  TypeDumps() : btf_(btf__new_empty()) {
    u8_ = btf__add_typedef(btf_, "__u8", btf__add_int(btf_, "unsigned char", 1, 0));
    char_ = btf__add_int(btf_, "char", 1, BTF_INT_SIGNED);
    bool_ = btf__add_typedef(btf_, "bool", btf__add_int(btf_, "_Bool", 1, BTF_INT_BOOL));
    u16_ = btf__add_typedef(btf_, "__u16", btf__add_int(btf_, "short unsigned int", 2, 0));
    u32_ = btf__add_int(btf_, "unsigned int", 4, 0);
    int_ = btf__add_int(btf_, "int", 4, BTF_INT_SIGNED);
    u64_ = btf__add_typedef(btf_, "u64", btf__add_int(btf_, "long long unsigned int", 8, 0));
  }
  ~TypeDumps() override { btf__free(btf_); }

  int array(int elem, uint32_t n) { return btf__add_array(btf_, u32_, elem, n); }

  struct Field {
    const char* name;  // null: anonymous
    int type;
    uint32_t bit;
    uint32_t bits = 0;  // a bitfield's
  };
  /// A struct (or union) of `fields`, whose types are all added before it, as libbpf needs.
  int record(const char* name, uint32_t size, const std::vector<Field>& fields, bool is_union = false) {
    int id = is_union ? btf__add_union(btf_, name, size) : btf__add_struct(btf_, name, size);
    for (const Field& f : fields) EXPECT_EQ(btf__add_field(btf_, f.name, f.type, f.bit, f.bits), 0) << (f.name ? f.name : "(anonymous)");
    return id;
  }

  /// The text and JSON dumps of `bytes` as type `id`, `captured` of them read (all of them
  /// when 0).
  void dump(int id, const std::vector<uint8_t>& bytes, uint32_t captured = 0) {
    auto view = host::BtfView::copyOf(btf_);
    ASSERT_TRUE(view) << view.error().message;
    KernelTypes types("/nonexistent", view->get());
    TypeDumper dumper(&types);
    plan::FieldLayout f{"v", plan::FieldKind::Record, 0, captured ? captured : static_cast<uint32_t>(bytes.size())};
    f.btf_id = static_cast<uint32_t>(id);
    text_ = dumper.recordText(f, bytes.data());
    json_ = dumper.recordJson(f, bytes.data());
  }

  ::btf* btf_;
  int u8_, char_, bool_, u16_, u32_, int_, u64_;
  std::string text_;
  Json json_;
};

// libbpf 1.1's btf_dump printed every u8, char and bool after the first NUL of a 1-byte
// array with no value, and kq's filter then dropped them (`sk_userlocks = 3` was lost).
TEST_F(TypeDumps, MembersAfterACharArrayWithANulKeepTheirValues) {
  int chars = array(char_, 4);
  int t = record("t", 12, {{"name", chars, 0}, {"locks", u8_, 32}, {"unset", u8_, 40}, {"frag", bool_, 48},
                           {"shift", char_, 56}, {"cb", chars, 64}});
  dump(t, {'h', 'i', 0, 0, 3, 0, 1, 10, 0x8e, 0, 'x', 0});
  EXPECT_EQ(text_,
            "(struct t){\n"
            "    .name = (char[4])\"hi\",\n"
            "    .locks = (__u8)3,\n"
            "    .frag = (bool)1,\n"
            "    .shift = (char)10,\n"
            "    .cb = (char[4])\"\\x8e\\x00x\",\n"
            "}");
  EXPECT_EQ(json_.dump(), R"({"name":"hi","locks":3,"unset":0,"frag":true,"shift":10,"cb":"\\x8e\\x00x"})");
}

TEST_F(TypeDumps, BitfieldsShowTheirBitsInHex) {
  int t = record("flags", 8,
                 {{"kind", u8_, 0, 3},
                  {"on", u8_, 3, 1},
                  {nullptr, u8_, 4, 2},  // padding: not shown
                  {"level", u8_, 6, 2},
                  {"wide", u32_, 14, 20},  // across three bytes
                  {"off", u16_, 48, 4}});
  uint64_t bits = 5 | 1 << 3 | 3 << 4 | 2ull << 6 | 0xabcdeull << 14;
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &bits, 8);
  dump(t, bytes);
  EXPECT_EQ(text_,
            "(struct flags){\n"
            "    .kind = (__u8)0x5,\n"
            "    .on = (__u8)0x1,\n"
            "    .level = (__u8)0x2,\n"
            "    .wide = (unsigned int)0xabcde,\n"
            "}");
  EXPECT_EQ(json_.dump(), R"({"kind":5,"on":1,"level":2,"wide":703710,"off":0})");
}

TEST_F(TypeDumps, AnonymousMembersNestInTextAndLiftInJson) {
  int halves = record(nullptr, 8, {{"lo", u32_, 0}, {"hi", u32_, 32}});
  int either = record(nullptr, 8, {{nullptr, halves, 0}, {"all", u64_, 0}}, /*is_union=*/true);
  int named = record("word", 4, {{"raw", u32_, 0}, {"half", u16_, 0}}, /*is_union=*/true);
  int t = record("u", 16,
                 {{nullptr, either, 0},
                  {"w", named, 64},
                  {"zero", named, 96}});  // a union all zero: left out
  dump(t, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0});
  EXPECT_EQ(text_,
            "(struct u){\n"
            "    (union){\n"
            "        (struct){\n"
            "            .lo = (unsigned int)1,\n"
            "        },\n"
            "        .all = (u64)1,\n"
            "    },\n"
            "    .w = (union word){\n"
            "        .raw = (unsigned int)131072,\n"
            "    },\n"
            "}");
  EXPECT_EQ(json_.dump(), R"({"lo":1,"hi":0,"all":1,"w":{"raw":131072,"half":0},"zero":{"raw":0,"half":0}})");
}

// A nested struct whose first members are zero stays with the rest (libbpf's own
// `emit_zeroes = false` dropped `__sk_common` whole); an all-zero dump shows its type.
TEST_F(TypeDumps, ZeroMembersGoAndWhatIsLeftStays) {
  int addrs = record(nullptr, 4, {{"daddr", u32_, 0}}, /*is_union=*/true);
  int hashes = array(u16_, 1);
  int common = record("sock_common", 8, {{nullptr, addrs, 0}, {"family", u16_, 32}, {"hashes", hashes, 48}});
  int sock = record("sock", 12, {{"common", common, 0}, {"rcvbuf", int_, 64}});
  dump(sock, {0, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff});
  EXPECT_EQ(text_,
            "(struct sock){\n"
            "    .common = (struct sock_common){\n"
            "        .family = (__u16)2,\n"
            "    },\n"
            "    .rcvbuf = (int)-1,\n"
            "}");
  dump(sock, std::vector<uint8_t>(12));
  EXPECT_EQ(text_, "(struct sock){\n}");
  EXPECT_EQ(json_["common"]["family"], 0);
}

TEST_F(TypeDumps, EnumeratorsByNameAndZeroLeftOutOfText) {
  int state = btf__add_enum(btf_, "state", 4);
  btf__add_enum_value(btf_, "S_NONE", 0);
  btf__add_enum_value(btf_, "S_OPEN", 1);
  btf__add_enum_value(btf_, "S_CLOSED", 2);
  int level = btf__add_enum(btf_, "level", 4);
  btf__add_enum_value(btf_, "L_LOW", -1);  // a signed enum
  int t = record("conn", 16, {{"a", state, 0}, {"b", state, 32}, {"c", state, 64}, {"d", level, 96}});
  dump(t, {2, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0xfb, 0xff, 0xff, 0xff});
  EXPECT_EQ(text_,
            "(struct conn){\n"
            "    .a = (enum state)S_CLOSED,\n"
            "    .b = (enum state)7,\n"
            "    .d = (enum level)-5,\n"
            "}");
  EXPECT_EQ(json_.dump(), R"({"a":"S_CLOSED","b":7,"c":"S_NONE","d":-5})");
}

TEST_F(TypeDumps, ArraysShowEveryElementUnlessAllAreZero) {
  int pair = record("pair", 4, {{"a", u16_, 0}, {"b", u16_, 16}});
  int t = record("arrays", 36,
                 {{"counts", array(u32_, 3), 0},
                  {"none", array(u32_, 2), 96},
                  {"pairs", array(pair, 3), 160},
                  {"grid", array(array(u8_, 2), 2), 256},
                  {"mark", array(u8_, 0), 288}});  // no size: not shown
  std::vector<uint8_t> bytes(36);
  bytes[0] = 3;
  bytes[24] = 1;
  bytes[35] = 5;
  dump(t, bytes);
  EXPECT_EQ(text_,
            "(struct arrays){\n"
            "    .counts = (unsigned int[3])[\n"
            "        3,\n"
            "        0,\n"
            "        0,\n"
            "    ],\n"
            "    .pairs = (struct pair[3])[\n"
            "        {},\n"
            "        {\n"
            "            .a = 1,\n"
            "        },\n"
            "        {},\n"
            "    ],\n"
            "    .grid = (__u8[2][2])[\n"
            "        [],\n"
            "        [\n"
            "            0,\n"
            "            5,\n"
            "        ],\n"
            "    ],\n"
            "}");
  EXPECT_EQ(json_.dump(),
            R"({"counts":[3,0,0],"none":[0,0],"pairs":[{"a":0,"b":0},{"a":1,"b":0},{"a":0,"b":0}],)"
            R"("grid":[[0,0],[0,5]]})");
}

TEST_F(TypeDumps, PointersAsHexWithTheirTypes) {
  int node_ptr = btf__add_ptr(btf_, btf__add_fwd(btf_, "node", BTF_FWD_STRUCT));
  int proto = btf__add_func_proto(btf_, 0);
  btf__add_func_param(btf_, "n", node_ptr);
  int node = record("node", 48,
                    {{"next", node_ptr, 0},
                     {"prev", node_ptr, 64},
                     {"fn", btf__add_ptr(btf_, proto), 128},
                     {"slots", array(node_ptr, 2), 192},
                     {"name", btf__add_ptr(btf_, btf__add_const(btf_, char_)), 320}});
  std::vector<uint8_t> bytes(48);
  uint64_t next = 0xffff888100001000, fn = 0xffffffff81000000, slot = 0xffff888100002000;
  std::memcpy(&bytes[0], &next, 8);
  std::memcpy(&bytes[16], &fn, 8);
  std::memcpy(&bytes[32], &slot, 8);
  std::memcpy(&bytes[40], &slot, 8);
  dump(node, bytes);
  EXPECT_EQ(text_,
            "(struct node){\n"
            "    .next = (struct node *)0xffff888100001000,\n"
            "    .fn = (void (*)(struct node *))0xffffffff81000000,\n"
            "    .slots = (struct node *[2])[\n"
            "        (nil),\n"
            "        0xffff888100002000,\n"
            "    ],\n"
            "    .name = (char *)0xffff888100002000,\n"
            "}");
  EXPECT_EQ(json_["prev"], "0x0");
  EXPECT_EQ(json_["slots"], Json::array({"0x0", "0xffff888100002000"}));
}

// A struct larger than what kq copied (1,024 bytes of a task_struct) shows what was read and
// says where the capture ends; nothing past it is shown, in text or JSON.
TEST_F(TypeDumps, AStructLargerThanTheCaptureEndsWhereItDoes) {
  int inner = record("inner", 8, {{"x", u32_, 0}, {"y", u32_, 32}});
  int big = record("big", 48, {{"a", u64_, 0}, {"in", inner, 64}, {"tail", array(u64_, 4), 128}});
  std::vector<uint8_t> bytes(48, 0x11);
  bytes[0] = 1;
  bytes[8] = 2;
  dump(big, bytes, 12);
  EXPECT_EQ(text_,
            "(struct big){\n"
            "    .a = (u64)1229782938247303425,\n"
            "    .in = (struct inner){\n"
            "        .x = (unsigned int)286331138,\n"
            "        /* 36 more bytes not captured */\n"
            "    },\n"
            "}");
  EXPECT_EQ(json_.dump(), R"({"a":1229782938247303425,"in":{"x":286331138}})");

  // The capture's end is said in the innermost block that shows anything.
  std::vector<uint8_t> zeroes(48);
  zeroes[0] = 1;
  dump(big, zeroes, 12);
  EXPECT_EQ(text_,
            "(struct big){\n"
            "    .a = (u64)1,\n"
            "    /* 36 more bytes not captured */\n"
            "}");

  int huge = record("huge", 5200, {{"a", u64_, 0}, {"rest", array(u8_, 5192), 64}});
  std::vector<uint8_t> large(5200);
  large[0] = 7;
  dump(huge, large, 80);
  EXPECT_EQ(text_,
            "(struct huge){\n"
            "    .a = (u64)7,\n"
            "    /* 5,120 more bytes not captured */\n"
            "}");
  EXPECT_EQ(json_["rest"].size(), 72u);  // the elements that were captured
}

}  // namespace
}  // namespace kq::runtime
