// Turns ANTLR's syntax errors into kq diagnostics in kq's own words: what was expected
// ("an expression", "a probe", "`)`"), after which token, with notes where they help.
// ANTLR's own messages ("mismatched input ... expecting {...}") never reach the user.
#pragma once

#include "DefaultErrorStrategy.h"
#include "compiler/diag/diagnostic.h"
#include "compiler/parse/token_source.h"

namespace kq::parse {

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  SyntaxErrorStrategy(const TokenSource& source, Diagnostics& diags)
      : source_(source), diags_(diags) {}

 protected:
  void reportNoViableAlternative(antlr4::Parser* parser,
                                 const antlr4::NoViableAltException& e) override;
  void reportInputMismatch(antlr4::Parser* parser, const antlr4::InputMismatchException& e) override;
  void reportFailedPredicate(antlr4::Parser* parser,
                             const antlr4::FailedPredicateException& e) override;
  void reportUnwantedToken(antlr4::Parser* parser) override;
  void reportMissingToken(antlr4::Parser* parser) override;

 private:
  /// "expected <what> after `<previous>`" or "unexpected `<offending>`", at `offending`.
  /// `unwanted`: ANTLR found an extra token it can skip.
  void reportExpected(antlr4::Parser* parser, antlr4::Token* offending,
                      const antlr4::misc::IntervalSet& expected, bool unwanted);
  /// What works in kq for a bpftrace probe where a query should start (`BEGIN`, `END`,
  /// `kprobe:f`), or empty.
  std::string bpftraceProbeHint(antlr4::TokenStream* tokens, antlr4::Token* word) const;

  const TokenSource& source_;
  Diagnostics& diags_;
  antlr4::Token* last_item_with_error_ = nullptr;
};

}  // namespace kq::parse
