// Parser tests that are clearer in C++ than as file tests: source ranges of AST nodes, and
// inputs too large or too strange to keep in a file.
#include "compiler/parse/parse.h"

#include <gtest/gtest.h>

namespace kq::parse {
namespace {

struct Parsed {
  SourceManager sources;
  Diagnostics diags;
  std::optional<ast::Script> script;
};

std::unique_ptr<Parsed> parse(std::string text) {
  auto out = std::make_unique<Parsed>();
  FileId file = out->sources.add("<input>", std::move(text));
  out->script = parseScript(out->sources, file, out->diags);
  return out;
}

std::string slice(const Parsed& p, SourceRange r) {
  return p.sources.file(r.file).text().substr(r.begin, r.end - r.begin);
}

TEST(Parse, RangesCoverWhatWasWritten) {
  auto p = parse("trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef");
  ASSERT_TRUE(p->script);
  const auto& query = std::get<ast::Query>(p->script->items.at(0));
  EXPECT_EQ(slice(*p, query.range), p->sources.file(0).text());
  EXPECT_EQ(slice(*p, query.probes.at(0).range), "ip_send_skb(skb)");
  const auto& where = ast::as<ast::Binary>(*query.clauses.where);
  EXPECT_EQ(slice(*p, where.range), "skb->len > 100 and mark == 0xdeadbeef");
  EXPECT_EQ(slice(*p, where.op_range), "and");
  const auto& len = ast::as<ast::Member>(*ast::as<ast::Binary>(*where.lhs).lhs);
  EXPECT_EQ(slice(*p, len.member_range), "len");
}

TEST(Parse, ParenthesesBelongToTheRange) {
  auto p = parse("trace x where (a + b) * 2");
  ASSERT_TRUE(p->script);
  const auto& mul = ast::as<ast::Binary>(*std::get<ast::Query>(p->script->items[0]).clauses.where);
  EXPECT_EQ(slice(*p, mul.lhs->range), "(a + b)");
}

TEST(Parse, DeepParenthesesAreADiagnostic) {
  std::string deep = "trace x where " + std::string(10000, '(') + "1" + std::string(10000, ')');
  auto p = parse(deep);
  EXPECT_FALSE(p->script);
  ASSERT_EQ(p->diags.all().size(), 1u);
  EXPECT_EQ(p->diags.all()[0].kind, DiagKind::NestingTooDeep);
}

TEST(Parse, DeepPrefixOperatorsAreADiagnostic) {
  for (std::string op : {"-", "!", "~", "not ", "*", "& ", "(u32)"}) {
    std::string deep = "trace x where ";
    for (int i = 0; i < 10000; ++i) deep += op;
    deep += "1";
    auto p = parse(deep);
    EXPECT_FALSE(p->script) << op;
    ASSERT_FALSE(p->diags.all().empty()) << op;
    EXPECT_EQ(p->diags.all()[0].kind, DiagKind::NestingTooDeep) << op;
  }
}

TEST(Parse, LongChainsAreADiagnosticNotACrash) {
  std::string chain = "trace x where 1";
  for (int i = 0; i < 50000; ++i) chain += " or 1";
  auto p = parse(chain);
  EXPECT_FALSE(p->script);
  ASSERT_EQ(p->diags.all().size(), 1u);
  EXPECT_EQ(p->diags.all()[0].kind, DiagKind::NestingTooDeep);
}

TEST(Parse, ConditionalChainsAreBounded) {
  std::string chain = "trace x where 1";
  for (int i = 0; i < 10000; ++i) chain += " ? 1 : 1";
  auto p = parse(chain);
  EXPECT_FALSE(p->script);
  ASSERT_FALSE(p->diags.all().empty());
  EXPECT_EQ(p->diags.all()[0].kind, DiagKind::NestingTooDeep);
}

TEST(Parse, ModeratelyLongChainsAreFine) {
  std::string chain = "trace x where pid == 1";
  for (int i = 2; i < 300; ++i) chain += " or pid == " + std::to_string(i);
  auto p = parse(chain);
  EXPECT_TRUE(p->script);
}

TEST(Parse, ManyQueriesInOneScript) {
  std::string script;
  for (int i = 0; i < 2000; ++i) script += "trace tracepoint:sched:sched_switch where cpu == " + std::to_string(i) + "\n";
  auto p = parse(script);
  ASSERT_TRUE(p->script);
  EXPECT_EQ(p->script->items.size(), 2000u);
}

TEST(Parse, OneMebibyteIsTooLarge) {
  std::string big = "trace x where comm == \"" + std::string(1 << 20, 'a') + "\"";
  auto p = parse(big);
  EXPECT_FALSE(p->script);
  ASSERT_EQ(p->diags.all().size(), 1u);
  EXPECT_EQ(p->diags.all()[0].kind, DiagKind::InputTooLarge);
}

TEST(Parse, EveryByteValueIsHandled) {
  // No byte, alone or after a query, may crash the parser.
  for (int b = 0; b < 256; ++b) {
    std::string one(1, static_cast<char>(b));
    auto p = parse("trace x where a " + one + " b");
    auto q = parse(one);
    (void)p;
    (void)q;
  }
}

}  // namespace
}  // namespace kq::parse
