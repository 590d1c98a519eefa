// Semantic analysis against the fake kernel: the BTF layer, the type table, and the
// promise that a one-character typo in the seed query gets an error where the typo is.
#include "compiler/sema/sema.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

#include "compiler/parse/parse.h"
#include "tests/support/fake_kernel.h"

namespace kq::sema {
namespace {

constexpr const char* kSeed = "trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef";

class SemaTest : public ::testing::Test {
 protected:
  std::unique_ptr<btf::Btf> btf_ = testing::fakeBtf();
  std::unique_ptr<host::KernelInfo> kernel_ = testing::fakeKernelInfo();

  /// Parses and checks `text`; returns the diagnostics.
  Diagnostics check(const std::string& text) {
    SourceManager sources;
    FileId file = sources.add("<input>", text);
    Diagnostics diags;
    auto script = parse::parseScript(sources, file, diags);
    if (script) analyze(*script, sources, *btf_, *kernel_, diags);
    return diags;
  }
};

TEST_F(SemaTest, FindsFunctionsAndPrototypes) {
  auto f = btf_->findFunction("ip_send_skb");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->prototype(), "int ip_send_skb(struct net *net, struct sk_buff *skb)");
  EXPECT_FALSE(btf_->findFunction("ip_sned_skb"));
  std::vector<std::string> names;
  for (const btf::Function& m : btf_->matchFunctions("tcp_v4_*")) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tcp_v4_connect", "tcp_v4_do_rcv", "tcp_v4_rcv"}));
}

TEST_F(SemaTest, FindsEnumerators) {
  auto e = btf_->findEnumerator("SKB_DROP_REASON_NO_SOCKET");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->value, 3);
  EXPECT_EQ(e->enum_type.name(), "skb_drop_reason");
}

TEST_F(SemaTest, MembersThroughAnonymousUnionsAndBitfields) {
  TypeTable types;
  const Type* skb = types.fromBtf(*btf_->findStruct("sk_buff"));
  auto next = types.findMember(skb, "next");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->steps.size(), 3u);  // anonymous union, anonymous struct, next
  EXPECT_EQ(next->type->spelling, "struct sk_buff *");
  auto pkt_type = types.findMember(skb, "pkt_type");
  ASSERT_TRUE(pkt_type);
  EXPECT_EQ(pkt_type->bitfield_bits, 3u);
  EXPECT_EQ(pkt_type->bit_offset, 704u);
  EXPECT_FALSE(types.findMember(skb, "lenn"));
}

TEST_F(SemaTest, TypesKeepTheirKernelNames) {
  TypeTable types;
  auto f = btf_->findFunction("tcp_sendmsg");
  const Type* size = types.fromBtf(f->params[2].type);
  EXPECT_EQ(size->spelling, "size_t");
  EXPECT_EQ(size->kind, TypeKind::Int);
  EXPECT_EQ(size->size, 8u);
  EXPECT_FALSE(size->is_signed);
}

TEST(EditDistance, CountsTyposLikePeopleMakeThem) {
  EXPECT_EQ(editDistance("len", "len"), 0u);
  EXPECT_EQ(editDistance("lenn", "len"), 1u);
  EXPECT_EQ(editDistance("ip_sned_skb", "ip_send_skb"), 1u);  // a swap is one typo
  EXPECT_EQ(editDistance("abc", ""), 3u);
  EXPECT_EQ(closestName("makr", {"mark", "len", "dev"}), "mark");
  EXPECT_EQ(closestName("zzzz", {"mark", "len"}), std::nullopt);
}

TEST(TracepointFormat, Parses) {
  auto format = host::parseTracepointFormat(
      "name: net_dev_xmit\nID: 2306\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
      "\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:char comm[16];\toffset:16;\tsize:16;\tsigned:0;\n"
      "\tfield:int rc;\toffset:32;\tsize:4;\tsigned:1;\n");
  ASSERT_TRUE(format);
  EXPECT_EQ(format->id, 2306u);
  ASSERT_EQ(format->fields.size(), 3u);
  EXPECT_EQ(format->fields[0].type, "void *");
  EXPECT_EQ(format->fields[0].name, "skbaddr");
  EXPECT_EQ(format->fields[1].type, "char[16]");
  EXPECT_EQ(format->fields[1].name, "comm");
  EXPECT_TRUE(format->fields[2].is_signed);
}

TEST(Glob, Matches) {
  EXPECT_TRUE(btf::globMatch("tcp_*", "tcp_sendmsg"));
  EXPECT_TRUE(btf::globMatch("*_skb", "ip_send_skb"));
  EXPECT_TRUE(btf::globMatch("ip?_output", "ip6_output"));
  EXPECT_TRUE(btf::globMatch("*", ""));
  EXPECT_FALSE(btf::globMatch("tcp_*", "udp_sendmsg"));
  EXPECT_FALSE(btf::globMatch("a*b*c", "abd"));
}

TEST_F(SemaTest, SeedQueryChecksCleanly) {
  Diagnostics diags = check(kSeed);
  EXPECT_FALSE(diags.hasErrors());
  EXPECT_TRUE(diags.all().empty());
}

// Every one-character deletion or substitution in the seed query either still checks, or
// is reported at (or right before) the place it was made.
TEST_F(SemaTest, EveryOneCharacterTypoInTheSeedIsPinpointed) {
  std::string seed = kSeed;
  int typos = 0;
  for (size_t p = 0; p < seed.size(); ++p) {
    if (seed[p] == ' ') continue;
    for (int kind = 0; kind < 2; ++kind) {
      std::string mutated = seed;
      if (kind == 0) {
        mutated.erase(p, 1);
      } else {
        mutated[p] = seed[p] == 'q' ? 'z' : 'q';
      }
      Diagnostics diags = check(mutated);
      if (!diags.hasErrors()) continue;
      ++typos;
      bool near = false;
      for (const Diagnostic& d : diags.all()) {
        // The reported range must reach the typo: at most a token before it.
        // (A missing bracket shows where the parser meets the next one: a few characters on.)
        near = near || (d.range.begin <= p + 6 && d.range.end + 16 >= p);
      }
      EXPECT_TRUE(near) << "typo at " << p << " in `" << mutated << "` reported at "
                        << diags.all().front().range.begin << ": " << diags.all().front().message;
    }
  }
  EXPECT_GT(typos, 60);
}

// `task` is typed by BTF: a BTF without `struct task_struct` makes it an error of its own,
// not a silent one.
TEST_F(SemaTest, TaskNeedsTaskStructInBtf) {
  ::btf* bare = btf__new_empty();
  btf__add_int(bare, "int", 4, BTF_INT_SIGNED);
  btf_ = btf::Btf::adopt(bare, "bare");
  Diagnostics diags = check("trace tracepoint:net:netif_receive_skb select task->pid");
  ASSERT_TRUE(diags.hasErrors());
  EXPECT_EQ(diags.all().front().kind, DiagKind::NotAvailableHere);
  EXPECT_NE(diags.all().front().message.find("`task`"), std::string::npos);
  EXPECT_EQ(diags.all().size(), 1u) << diags.all().back().message;
}

TEST_F(SemaTest, ManyCompilationsInOneProcess) {
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(check(kSeed).hasErrors());
}

}  // namespace
}  // namespace kq::sema
