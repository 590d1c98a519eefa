#include "compiler/parse/syntax_errors.h"

#include <set>

#include <fmt/format.h>

#include "KqParser.h"

namespace kq::parse {
namespace {

using antlr4::Token;
using antlr4::misc::IntervalSet;
using P = kqgrammar::KqParser;

constexpr const char* kClauseHint =
    "a query continues with `where`, `select`, `group by`, `every`, `for` or `limit`";

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

/// The nearest token after `index` on the default channel, or null at the end.
Token* nextToken(antlr4::TokenStream* tokens, size_t index) {
  while (index + 1 < tokens->size()) {
    Token* t = tokens->get(++index);
    if (t->getType() == Token::EOF) return nullptr;
    if (t->getChannel() == Token::DEFAULT_CHANNEL) return t;
  }
  return nullptr;
}

/// The keyword that starts the script item holding token `index` (`trace`, `let`, ...).
Token* itemStart(antlr4::TokenStream* tokens, size_t index) {
  for (size_t i = index + 1; i-- > 0;) {
    Token* t = tokens->get(i);
    switch (t->getType()) {
      case P::TRACE: case P::LET: case P::FN: case P::USE: case P::EXTENSION: return t;
      default: break;
    }
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

Expectation describe(antlr4::Parser* parser, const IntervalSet& expected, Token* previous,
                     Token* offending) {
  size_t rule = parser->getContext()->getRuleIndex();
  size_t prev = previous ? previous->getType() : Token::INVALID_TYPE;

  // Keywords may be names, so the expected sets of names, expressions and probes overlap:
  // the rule being parsed decides first, then tokens only one of them can start with.
  bool in_probe = rule == P::RuleTarget || rule == P::RuleProbe || rule == P::RulePattern ||
                  rule == P::RulePatternPart;
  if (rule == P::RuleMemberName || prev == P::DOT || (prev == P::ARROW && !in_probe)) {
    return {DiagKind::ExpectedName, "a member name", ""};
  }
  if (rule == P::RuleName) return {DiagKind::ExpectedName, "a name", ""};
  if (prev == P::UPROBE || prev == P::URETPROBE || has(expected, P::UPROBE_PATH)) {
    return {DiagKind::ExpectedName, "the path of a binary",
            "for example `uprobe:/usr/bin/bash:readline`"};
  }
  if (prev == P::SOFTWARE || prev == P::HARDWARE || has(expected, P::PERF_EVENT)) {
    return {DiagKind::ExpectedName, "a perf event",
            "for example `software:page-faults:100`; kq list 'software:*' shows them"};
  }
  if (rule == P::RuleScript || rule == P::RuleItem) {
    Token* item = itemStart(parser->getTokenStream(), offending->getTokenIndex());
    if (item && item->getType() == P::TRACE && item != offending) {
      return {DiagKind::UnexpectedToken, "a clause",
              std::string(kClauseHint) + "; a new query starts with `trace`"};
    }
    return {DiagKind::UnexpectedToken, "a query or a declaration",
            "a script holds queries (`trace ...`) and declarations (`let`, `fn`, `use`, "
            "`extension`)"};
  }
  if (rule == P::RuleTypeName || rule == P::RuleScalarKeyword) {
    return {DiagKind::ExpectedType, "a type", "for example `struct sock *`, `u32`, `unsigned long`"};
  }
  if (containsAll(expected, {P::NUMBER, P::STRING, P::IDENT, P::LPAREN})) {
    return {DiagKind::ExpectedExpression, "an expression", ""};
  }
  if (in_probe || has(expected, P::UPROBE)) {
    // Once part of a probe is written, what follows is its rest or the query's clauses.
    bool started = parser->getContext()->getStart()->getTokenIndex() < offending->getTokenIndex();
    if (has(expected, P::WHERE)) {
      return {DiagKind::UnexpectedToken, "a clause", kClauseHint};
    }
    if (!started) {
      return {DiagKind::ExpectedProbe, "a probe",
              "for example `ip_send_skb(skb)`, `tcp_*`, `tracepoint:net:net_dev_xmit`, "
              "`syscall:openat`"};
    }
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
    return {DiagKind::UnexpectedToken, "a clause", kClauseHint};
  }
  // Inside a table literal: what could start an expression but a name.
  if (has(expected, P::STRING) && has(expected, P::NUMBER) && !has(expected, P::IDENT)) {
    return {DiagKind::ExpectedToken, "an integer or a string",
            "a table's keys and values are literals, as in `{0: \"CAP_CHOWN\"}`"};
  }
  return {DiagKind::ExpectedToken, listTokens(parser->getVocabulary(), expected), ""};
}

}  // namespace

std::string SyntaxErrorStrategy::bpftraceProbeHint(antlr4::TokenStream* tokens,
                                                   Token* word) const {
  std::string text(source_.text(word));
  if (text == "BEGIN") {
    return "kq writes bpftrace's `BEGIN` as a query: `trace begin select \"Tracing...\"` runs once, "
           "when every probe is attached";
  }
  if (text == "END") {
    return "kq writes bpftrace's `END` as a query: `trace end select elapsed` runs once, as the "
           "session ends; a query with aggregates prints its table then without one";
  }
  // bpftrace's `kprobe:f`, `kretprobe:f`, `fentry:f`: kq names a kernel function bare.
  static const std::set<std::string> entries = {"kprobe", "fentry", "kfunc"};
  static const std::set<std::string> returns = {"kretprobe", "fexit", "kretfunc"};
  if (!entries.count(text) && !returns.count(text)) return "";
  Token* colon = nextToken(tokens, word->getTokenIndex());
  Token* function = colon ? nextToken(tokens, colon->getTokenIndex()) : nullptr;
  if (colon && colon->getType() == P::COLON && function && function->getType() == P::BPF) {
    // bpftrace's `fentry:bpf:[ID:]NAME`: a loaded BPF program.
    Token* program = nextToken(tokens, function->getTokenIndex());
    if (program && program->getType() == P::NUMBER) {
      Token* second = nextToken(tokens, program->getTokenIndex());
      Token* name = second && second->getType() == P::COLON ? nextToken(tokens, second->getTokenIndex()) : nullptr;
      if (name && name->getType() == P::IDENT) program = name;
    }
    if (!program || (program->getType() != P::IDENT && program->getType() != P::NUMBER)) return "";
    std::string name(source_.text(program));
    return returns.count(text)
               ? fmt::format("kq names a loaded BPF program `bpf:NAME` (or `bpf:ID`), and `return` "
                             "is its verdict at its exit: `trace bpf:{} select return`", name)
               : fmt::format("kq names a loaded BPF program `bpf:NAME` (or `bpf:ID`): `trace bpf:{}`", name);
  }
  if (!colon || colon->getType() != P::COLON || !function || function->getType() != P::IDENT) {
    return "";
  }
  std::string name(source_.text(function));
  return returns.count(text)
             ? fmt::format("kq names a kernel function bare, and `return` makes the probe one "
                           "at its exit: `trace {}(return)`", name)
             : fmt::format("kq names a kernel function bare: `trace {}`", name);
}

void SyntaxErrorStrategy::reportExpected(antlr4::Parser* parser, Token* offending,
                                         const IntervalSet& expected, bool unwanted) {
  antlr4::TokenStream* tokens = parser->getTokenStream();
  // One error per query or declaration: what ANTLR finds after the first is mostly the
  // echo of its recovery.
  Token* previous = previousToken(tokens, offending->getTokenIndex());
  Token* item = itemStart(tokens, (previous ? previous : offending)->getTokenIndex());
  if (item && item == last_item_with_error_) return;
  last_item_with_error_ = item;

  Expectation expectation = describe(parser, expected, previous, offending);
  // Something missing at the end of a line is reported there, not at the next line's start.
  bool at_end = offending->getType() == Token::EOF ||
                (previous && offending->getLine() > previous->getLine());

  // "unexpected X" when anything could have come next, "expected Y after Z" when one thing.
  bool general = expectation.kind == DiagKind::UnexpectedToken ||
                 (unwanted && expectation.kind == DiagKind::ExpectedToken);
  std::string message;
  if (general) {
    expectation.kind = DiagKind::UnexpectedToken;
    message = fmt::format("unexpected {}", source_.display(offending));
    if (expectation.hint.empty()) expectation.hint = fmt::format("expected {}", expectation.what);
    if (offending->getType() == P::IDENT) {
      std::string hint = bpftraceProbeHint(tokens, offending);
      if (!hint.empty()) {
        expectation.hint = std::move(hint);
      } else if (previous == nullptr) {
        expectation.hint = fmt::format("a query starts with `trace`: did you mean `trace {}`?",
                                       source_.text(offending));
      }
    }
  } else {
    message = fmt::format("expected {}", expectation.what);
    if (previous) message += fmt::format(" after {}", source_.display(previous));
    if (!at_end) message += fmt::format(", found {}", source_.display(offending));
  }
  size_t rule = parser->getContext()->getRuleIndex();
  if (offending->getType() == P::ASSIGN && rule != P::RuleName && rule != P::RuleLetDecl) {
    expectation.hint = "to compare values, write `==`";
  }
  bool glob_part = offending->getType() == P::STAR || offending->getType() == P::QUESTION;
  if (glob_part && previous && previous->getType() == P::IDENT &&
      previous->getStopIndex() + 1 < offending->getStartIndex()) {
    expectation.hint = fmt::format("a glob has no spaces: write `{}{}`", source_.text(previous),
                                   source_.text(offending));
  }

  // Where something is missing, the caret goes just past the token before it.
  SourceRange at = source_.range(offending);
  if (!general && at_end && previous) {
    uint32_t end = source_.range(previous).end;
    at = {source_.file(), end, end};
  }
  Diagnostic& diag = diags_.report(expectation.kind, at, message);
  if (!expectation.hint.empty()) diag.note(expectation.hint);

  size_t type = offending->getType();
  constexpr std::pair<size_t, size_t> kBrackets[] = {
      {P::LPAREN, P::RPAREN}, {P::LBRACKET, P::RBRACKET}, {P::LBRACE, P::RBRACE}};
  for (auto [open, close] : kBrackets) {
    if (type == close && !unclosedOpener(tokens, offending->getTokenIndex(), open, close)) {
      diag.note(fmt::format("nothing before it opens a {}",
                            quoteTokenType(parser->getVocabulary(), open)));
    }
  }
  for (auto [open, close] : kBrackets) {
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
  reportExpected(parser, offending, parser->getExpectedTokens(), /*unwanted=*/false);
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser* parser,
                                              const antlr4::InputMismatchException& e) {
  reportExpected(parser, e.getOffendingToken(), e.getExpectedTokens(), /*unwanted=*/false);
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
  reportExpected(parser, parser->getCurrentToken(), getExpectedTokens(parser), /*unwanted=*/true);
}

void SyntaxErrorStrategy::reportMissingToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  reportExpected(parser, parser->getCurrentToken(), getExpectedTokens(parser), /*unwanted=*/false);
}

}  // namespace kq::parse
