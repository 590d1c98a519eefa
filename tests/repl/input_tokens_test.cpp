// The tokens of input being typed, and when the interactive session reads another line.
#include "repl/input_tokens.h"

#include <gtest/gtest.h>

namespace kq::repl {
namespace {

TEST(InputTokensTest, SplitsAnyPrefixOfAQuery) {
  std::string text = "trace f(skb) where skb->len >= 4k and comm == \"a\\\"b # x";
  std::vector<InputToken> tokens = inputTokens(text);
  std::vector<std::string> texts;
  for (const InputToken& t : tokens) texts.emplace_back(t.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"trace", "f", "(", "skb", ")", "where", "skb", "->", "len",
                                             ">=", "4k", "and", "comm", "==", "\"a\\\"b # x"}));
  EXPECT_TRUE(tokens.back().unterminated);
  EXPECT_EQ(tokens[10].kind, InputToken::Kind::Number);
  EXPECT_EQ(tokens[7].begin, 22u);
}

TEST(InputTokensTest, CommentsAreDropped) {
  std::vector<InputToken> tokens = inputTokens("trace f # where\nselect x");
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_TRUE(tokens[2].is("select"));
}

TEST(InputTokensTest, AUprobePathIsOneToken) {
  std::vector<InputToken> tokens = inputTokens("trace uprobe: /usr/lib/libc.so.6:malloc(size)");
  ASSERT_GE(tokens.size(), 5u);
  EXPECT_EQ(tokens[3].kind, InputToken::Kind::Path);
  EXPECT_EQ(tokens[3].text, "/usr/lib/libc.so.6");
  EXPECT_TRUE(tokens[4].is(":"));
  EXPECT_EQ(inputTokens("trace uretprobe:/bin/ba").back().kind, InputToken::Kind::Path);
}

TEST(InputTokensTest, UnfinishedInputsReadAnotherLine) {
  for (const char* text : {"trace f(skb", "trace f(skb) where", "trace f(skb) where skb->len >",
                           "trace f(skb) where skb->", "trace f(skb) group by", "trace f(skb) group",
                           "trace f(skb) select a,", "trace f(skb) where a and", "trace f(skb) where {1: \"a\",",
                           "trace", "trace f(skb) join g as", "let x =", "fn f(x)", "let x",
                           "trace f where # a comment\n", "check trace f where"}) {
    EXPECT_TRUE(unfinished(text)) << text;
  }
  for (const char* text : {"trace f(skb)", "trace tcp_*", "trace f(skb) where skb->len > 1",
                           "trace f select x &", "trace f(skb) where skb->for", "let x = 1",
                           "fn f(x) = x", "use net", "info struct", "list tcp_", "help", "stop",
                           "trace f where comm == \"unterminated", "", "# only a comment"}) {
    EXPECT_FALSE(unfinished(text)) << text;
  }
}

TEST(InputTokensTest, JoinKeepsAdjacentTokensTogether) {
  std::string text = "trace  tcp_*( skb )\n ->  b";
  std::vector<InputToken> tokens = inputTokens(text);
  EXPECT_EQ(joinTokens(text, tokens, 0, tokens.size()), "trace tcp_*( skb ) -> b");
}

}  // namespace
}  // namespace kq::repl
