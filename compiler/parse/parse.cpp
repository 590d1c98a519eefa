#include "compiler/parse/bpftrace_spelling.h"
#include "compiler/parse/parse.h"

#include <fmt/format.h>

#include "BaseErrorListener.h"
#include "CommonTokenStream.h"
#include "KqLexer.h"
#include "KqParser.h"
#include "compiler/parse/ast_builder.h"
#include "compiler/parse/lexical.h"
#include "compiler/parse/syntax_errors.h"

namespace kq::parse {
namespace {

/// Thrown from inside the generated parser when rules nest too deeply, before the C++ stack
/// that recursive descent uses runs out.
struct NestingLimitReached {
  antlr4::Token* token;
};

/// The generated parser with a bound on rule nesting: `((((...))))` 10,000 levels deep is a
/// diagnostic, not a stack overflow.
class BoundedParser : public kqgrammar::KqParser {
 public:
  BoundedParser(antlr4::TokenStream* input, size_t max_depth)
      : KqParser(input), max_depth_(max_depth) {}

  void enterRule(antlr4::ParserRuleContext* ctx, size_t state, size_t rule) override {
    check(ctx);
    KqParser::enterRule(ctx, state, rule);
  }

  void enterRecursionRule(antlr4::ParserRuleContext* ctx, size_t state, size_t rule,
                          int precedence) override {
    check(ctx);
    KqParser::enterRecursionRule(ctx, state, rule, precedence);
  }

 private:
  void check(antlr4::ParserRuleContext* ctx) {
    if (static_cast<size_t>(ctx->depth()) > max_depth_) {
      throw NestingLimitReached{getCurrentToken()};
    }
  }

  size_t max_depth_;
};

/// Catches any report the error strategy did not phrase itself, so that no syntax error
/// goes unreported (or reaches the terminal in ANTLR's words).
class FallbackListener : public antlr4::BaseErrorListener {
 public:
  FallbackListener(const TokenSource& source, Diagnostics& diags)
      : source_(source), diags_(diags) {}

  void syntaxError(antlr4::Recognizer*, antlr4::Token* token, size_t, size_t,
                   const std::string&, std::exception_ptr) override {
    if (!token) return;
    diags_.report(DiagKind::UnexpectedToken, source_.range(token),
                  fmt::format("unexpected {}", source_.display(token)));
  }

 private:
  const TokenSource& source_;
  Diagnostics& diags_;
};

}  // namespace

namespace {

/// Lexes and parses `file` with the grammar's rule `entry`, reporting every error; then
/// `build` makes the AST of the tree. Nothing when any error was reported.
template <class Entry, class Build>
auto parseWith(const SourceManager& sources, FileId file, Diagnostics& diags, Entry entry, Build build)
    -> std::optional<decltype(build(entry(std::declval<kqgrammar::KqParser&>()), std::declval<TokenSource&>()))> {
  const SourceFile& text = sources.file(file);
  size_t errors_before = diags.errorCount();
  if (!checkInputText(text, file, diags)) return std::nullopt;
  // bpftrace's one-liner: said once, with kq's query for it, not as kq's errors at each mark.
  if (std::optional<BpftraceSpelling> bpftrace = bpftraceSpelling(text.text())) {
    uint32_t at = static_cast<uint32_t>(bpftrace->brace);
    Diagnostic& d = diags.report(DiagKind::UnexpectedToken, {file, at, at + 1},
                                 "this is bpftrace's language: kq reads queries");
    if (!bpftrace->query.empty()) {
      d.note(fmt::format("in kq: {}", bpftrace->query));
    } else {
      d.note("a query reads `trace PROBE where FILTER select ...`: `@[comm] = count()` is "
             "`group by comm select comm, count()`, `printf(...)` is `select fmt(...)`");
    }
    return std::nullopt;
  }

  antlr4::ANTLRInputStream input(text.text());
  kqgrammar::KqLexer lexer(&input);
  lexer.removeErrorListeners();  // every character has a token; bad ones are checked below
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();

  TokenSource source(text, file);
  checkTokens(tokens.getTokens(), source, diags);

  // Rule depth grows by about two per level of parentheses; the AST builder bounds depth
  // separately for chains that the parser handles with loops.
  BoundedParser parser(&tokens, 2 * kMaxNesting);
  FallbackListener fallback(source, diags);
  parser.removeErrorListeners();
  parser.addErrorListener(&fallback);
  parser.setErrorHandler(std::make_shared<SyntaxErrorStrategy>(source, diags));

  decltype(entry(parser)) tree = nullptr;
  try {
    tree = entry(parser);
  } catch (const NestingLimitReached& limit) {
    diags.report(DiagKind::NestingTooDeep, source.range(limit.token),
                 fmt::format("expression nests more than {} levels deep", kMaxNesting))
        .note("split it with `let` or `fn` declarations");
    return std::nullopt;
  }
  if (diags.errorCount() > errors_before) return std::nullopt;
  auto built = build(tree, source);
  if (diags.errorCount() > errors_before) return std::nullopt;
  return built;
}

}  // namespace

std::optional<ast::Script> parseScript(const SourceManager& sources, FileId file,
                                       Diagnostics& diags) {
  std::optional<std::optional<ast::Script>> script = parseWith(
      sources, file, diags, [](kqgrammar::KqParser& p) { return p.script(); },
      [&](kqgrammar::KqParser::ScriptContext* tree, TokenSource& source) -> std::optional<ast::Script> {
        if (tree->item().empty()) {
          diags.report(DiagKind::EmptyInput, {file, 0, 0}, "the input has no query")
              .note("a query starts with `trace`, for example: trace syscall:openat");
          return std::nullopt;
        }
        return buildScript(tree, source, diags);
      });
  if (!script || !*script) return std::nullopt;
  return std::move(**script);
}

std::optional<ast::Query> parseReplayQuery(const SourceManager& sources, FileId file, Diagnostics& diags) {
  return parseWith(
      sources, file, diags, [](kqgrammar::KqParser& p) { return p.replayQuery(); },
      [&](kqgrammar::KqParser::ReplayQueryContext* tree, TokenSource& source) {
        return buildReplayQuery(tree, source, diags);
      });
}

}  // namespace kq::parse
