// Builds kq's AST from an ANTLR parse tree that has no syntax errors. Reports the problems
// only visible in structure: repeated clauses, clauses an extension cannot have, numbers with
// the wrong unit, and expressions nested beyond what later passes can walk.
#pragma once

#include "KqParser.h"
#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostic.h"
#include "compiler/parse/token_source.h"

namespace kq::parse {

/// Deepest expression kq accepts; later passes recurse over expressions.
constexpr size_t kMaxNesting = 1000;

ast::Script buildScript(kqgrammar::KqParser::ScriptContext* tree, const TokenSource& source,
                        Diagnostics& diags);
ast::Query buildReplayQuery(kqgrammar::KqParser::ReplayQueryContext* tree, const TokenSource& source,
                            Diagnostics& diags);

}  // namespace kq::parse
