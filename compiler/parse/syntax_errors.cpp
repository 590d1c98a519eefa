#include "compiler/parse/syntax_errors.h"

#include <fmt/format.h>

#include "KqParser.h"

namespace kq::parse {
namespace {

using antlr4::Token;
using antlr4::misc::IntervalSet;
using P = kqgrammar::KqParser;

/// What the parser wanted, phrased for a person.
struct Expectation {
  DiagKind kind;
  std::string what;  // "an expression", "`)`"
  std::string hint;  // empty, or a note to add
};

bool has(const IntervalSet& set, size_t type) { return set.contains(type); }

bool containsAll(const IntervalSet& set, std::initializer_list<size_t> types) {
  for (size_t t : types) {
    if (!has(set, t)) return false;
  }
  return true;
}

/// The nearest token before `index` on the default channel, or null at the start.
Token* previousToken(antlr4::TokenStream* tokens, size_t index) {
  while (index > 0) {
    Token* t = tokens->get(--index);
    if (t->getChannel() == Token::DEFAULT_CHANNEL) return t;
  }
  return nullptr;
}

/// For a missing `)` or `]`: the unclosed opener before `index`, if any.
Token* unclosedOpener(antlr4::TokenStream* tokens, size_t index, size_t open, size_t close) {
  int depth = 0;
  while (index > 0) {
    Token* t = tokens->get(--index);
    if (t->getType() == close) ++depth;
    if (t->getType() == open && depth-- == 0) return t;
  }
  return nullptr;
}

std::string quoteTokenType(const antlr4::dfa::Vocabulary& vocabulary, size_t type) {
  std::string literal = vocabulary.getLiteralName(type);  // "'('" for punctuation
  if (literal.size() >= 2) return "`" + literal.substr(1, literal.size() - 2) + "`";
  if (type == Token::EOF) return "the end of the input";
  return vocabulary.getSymbolicName(type);
}

std::string listTokens(const antlr4::dfa::Vocabulary& vocabulary, const IntervalSet& set) {
  std::vector<std::string> names;
  for (size_t type : set.toList()) names.push_back(quoteTokenType(vocabulary, type));
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

Expectation describe(antlr4::Parser* parser, const IntervalSet& expected, Token* previous) {
  size_t rule = parser->getContext()->getRuleIndex();
  size_t prev = previous ? previous->getType() : Token::INVALID_TYPE;

  if (containsAll(expected, {P::USE, P::LET, P::FN, P::TRACE})) {
    return {DiagKind::UnexpectedToken, "a query or a declaration",
            "a script holds queries (`trace ...`) and declarations (`let`, `fn`, `use`, "
            "`extension`)"};
  }
  if (rule == P::RuleTarget || rule == P::RuleProbe || containsAll(expected, {P::TRACEPOINT, P::SYSCALL})) {
    return {DiagKind::ExpectedProbe, "a probe",
            "for example `ip_send_skb(skb)`, `tcp_*`, `tracepoint:net:net_dev_xmit`, "
            "`syscall:openat`"};
  }
  if (rule == P::RuleTypeName || containsAll(expected, {P::STRUCT, P::UNSIGNED})) {
    return {DiagKind::ExpectedType, "a type", "for example `struct sock *`, `u32`, `unsigned long`"};
  }
  if (containsAll(expected, {P::NUMBER, P::STRING, P::IDENT, P::LPAREN})) {
    return {DiagKind::ExpectedExpression, "an expression", ""};
  }
  if (has(expected, P::UPROBE_PATH)) {
    return {DiagKind::ExpectedName, "the path of a binary",
            "for example `uprobe:/usr/bin/bash:readline`"};
  }
  if (has(expected, P::IDENT) && !has(expected, P::NUMBER)) {
    bool member = rule == P::RuleMemberName || prev == P::DOT || prev == P::ARROW;
    return {DiagKind::ExpectedName, member ? "a member name" : "a name", ""};
  }
  if (expected.size() == 1 && has(expected, P::NUMBER)) {
    switch (prev) {
      case P::FOR:
      case P::EVERY:
      case P::INTERVAL:
        return {DiagKind::ExpectedNumber, "a duration", "for example `10s`, `500ms`, `2m`"};
      case P::LIMIT: return {DiagKind::ExpectedNumber, "a count", "for example `limit 10`"};
      case P::PROFILE: return {DiagKind::ExpectedNumber, "a frequency", "for example `99hz`"};
      default: return {DiagKind::ExpectedNumber, "a number", ""};
    }
  }
  if (has(expected, P::WHERE) && has(expected, P::SELECT)) {
    return {DiagKind::UnexpectedToken, "a clause",
            "a query continues with `where`, `select`, `group by`, `every`, `for` or `limit`"};
  }
  return {DiagKind::ExpectedToken, listTokens(parser->getVocabulary(), expected), ""};
}

}  // namespace

void SyntaxErrorStrategy::reportExpected(antlr4::Parser* parser, Token* offending,
                                         const IntervalSet& expected) {
  antlr4::TokenStream* tokens = parser->getTokenStream();
  Token* previous = previousToken(tokens, offending->getTokenIndex());
  Expectation expectation = describe(parser, expected, previous);
  bool at_end = offending->getType() == Token::EOF;

  std::string message;
  if (expectation.kind == DiagKind::UnexpectedToken) {
    message = fmt::format("unexpected {}", source_.display(offending));
    if (!at_end && previous == nullptr && offending->getType() == P::IDENT) {
      expectation.hint = fmt::format("a query starts with `trace`: did you mean `trace {}`?",
                                     source_.text(offending));
    }
  } else {
    message = fmt::format("expected {}", expectation.what);
    if (previous) message += fmt::format(" after {}", source_.display(previous));
    if (!at_end) message += fmt::format(", found {}", source_.display(offending));
  }

  // At the end of the input the caret goes just past the last token, where text is missing.
  SourceRange at = source_.range(offending);
  if (at_end && previous) {
    uint32_t end = source_.range(previous).end;
    at = {source_.file(), end, end};
  }
  Diagnostic& diag = diags_.report(expectation.kind, at, message);
  if (!expectation.hint.empty()) diag.note(expectation.hint);

  for (auto [open, close] : {std::pair<size_t, size_t>{P::LPAREN, P::RPAREN},
                             std::pair<size_t, size_t>{P::LBRACKET, P::RBRACKET}}) {
    if (!has(expected, close)) continue;
    if (Token* opener = unclosedOpener(tokens, offending->getTokenIndex(), open, close)) {
      diag.note(source_.range(opener), fmt::format("to match this {}", source_.display(opener)));
      break;
    }
  }
}

void SyntaxErrorStrategy::reportNoViableAlternative(antlr4::Parser* parser,
                                                    const antlr4::NoViableAltException& e) {
  // ANTLR reports where prediction failed; the expected set is what could start there.
  Token* offending = e.getStartToken() ? e.getStartToken() : e.getOffendingToken();
  if (e.getOffendingToken() && e.getStartToken() &&
      e.getOffendingToken()->getTokenIndex() > e.getStartToken()->getTokenIndex() + 1) {
    offending = e.getOffendingToken();
  }
  reportExpected(parser, offending, parser->getExpectedTokens());
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser* parser,
                                              const antlr4::InputMismatchException& e) {
  reportExpected(parser, e.getOffendingToken(), e.getExpectedTokens());
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser* parser,
                                                const antlr4::FailedPredicateException& e) {
  Token* offending = e.getOffendingToken();
  diags_.report(DiagKind::UnexpectedToken, source_.range(offending),
                fmt::format("unexpected {}", source_.display(offending)));
  (void)parser;
}

void SyntaxErrorStrategy::reportUnwantedToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  Token* offending = parser->getCurrentToken();
  Expectation expectation =
      describe(parser, getExpectedTokens(parser),
               previousToken(parser->getTokenStream(), offending->getTokenIndex()));
  Diagnostic& diag = diags_.report(DiagKind::UnexpectedToken, source_.range(offending),
                                   fmt::format("unexpected {}", source_.display(offending)));
  if (!expectation.hint.empty()) {
    diag.note(expectation.hint);
  } else {
    diag.note(fmt::format("expected {} here", expectation.what));
  }
}

void SyntaxErrorStrategy::reportMissingToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  reportExpected(parser, parser->getCurrentToken(), getExpectedTokens(parser));
}

}  // namespace kq::parse
