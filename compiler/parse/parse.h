// The parser: text -> kq AST. This is the only part of kq that sees ANTLR.
#pragma once

#include <optional>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostic.h"

namespace kq::parse {

/// Largest input kq reads; a query or script beyond this is almost surely a mistake.
constexpr size_t kMaxInputBytes = 256 * 1024;

/// Parses one file of `sources`, reporting every lexical and syntax error it finds to
/// `diags` (error recovery continues past the first). Returns nothing when any was reported.
std::optional<ast::Script> parseScript(const SourceManager& sources, FileId file,
                                       Diagnostics& diags);

/// Parses a query over a recording's events (`kq replay FILE QUERY`): clauses, with
/// `trace PROBE, ...` first if it names which recorded probes it reads.
std::optional<ast::Query> parseReplayQuery(const SourceManager& sources, FileId file, Diagnostics& diags);

}  // namespace kq::parse
