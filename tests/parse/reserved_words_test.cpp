// docs/language.md's lists of reserved words and of words that are keywords only in places
// hold every word of the lexer (grammar/KqLexer.g4), each behaving as its list says: a
// reserved word cannot name a `let`, a contextual one can.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "compiler/parse/parse.h"

namespace kq::parse {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The words between backticks in the paragraph of `doc` that starts with `lead`, up to the
/// next sentence naming what they are.
std::set<std::string> wordsAfter(const std::string& doc, const std::string& lead) {
  size_t at = doc.find(lead);
  EXPECT_NE(at, std::string::npos) << lead;
  if (at == std::string::npos) return {};
  size_t open = doc.find('`', at + lead.size() - 1);
  size_t close = doc.find('`', open + 1);
  std::set<std::string> words;
  std::stringstream list(doc.substr(open + 1, close - open - 1));
  for (std::string w; list >> w;) words.insert(w);
  return words;
}

bool namesALet(const std::string& word) {
  SourceManager sources;
  Diagnostics diags;
  FileId file = sources.add("<input>", "let " + word + " = 1");
  return parseScript(sources, file, diags).has_value() && !diags.hasErrors();
}

TEST(ReservedWords, TheDocsListEveryWordOfTheLexer) {
  std::string doc = readFile(std::string(KQ_TESTS_DIR) + "/../docs/language.md");
  std::string lexer = readFile(std::string(KQ_TESTS_DIR) + "/../grammar/KqLexer.g4");
  std::set<std::string> reserved = wordsAfter(doc, "Reserved words: `");
  std::set<std::string> contextual = wordsAfter(doc, "The\nwords `");
  ASSERT_FALSE(reserved.empty());
  ASSERT_FALSE(contextual.empty());

  // `NAME : 'word' | 'other' ;` in the default mode: the lexer's words (not the integer
  // types' rule, which builds names of pieces, nor uprobe's, which needs a `:`).
  std::set<std::string> words;
  std::regex rule(R"(^[A-Z_]+ : ('[A-Za-z_]+'(?: \| '[A-Za-z_]+')*) ;)");
  std::regex literal(R"('([A-Za-z_]+)')");
  std::stringstream lines(lexer.substr(0, lexer.find("mode PATH_MODE")));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, rule)) continue;
    std::string body = m[1];
    for (std::sregex_iterator it(body.begin(), body.end(), literal), end; it != end; ++it) {
      words.insert((*it)[1]);
    }
  }
  ASSERT_GT(words.size(), 30u);
  for (const std::string& w : words) {
    SCOPED_TRACE(w);
    bool listed = reserved.count(w) + contextual.count(w) == 1;
    EXPECT_TRUE(listed) << "in neither list, or in both";
    EXPECT_EQ(namesALet(w), contextual.count(w) == 1);
  }
  for (const std::string& w : reserved) EXPECT_TRUE(words.count(w)) << w << " is no word of the lexer";
  for (const std::string& w : contextual) EXPECT_TRUE(words.count(w)) << w << " is no word of the lexer";
}

}  // namespace
}  // namespace kq::parse
