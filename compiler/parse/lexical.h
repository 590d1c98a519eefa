// Checks that run before parsing: the input's size and encoding, then every token
// (characters kq does not know, malformed numbers and strings). Reporting these from the
// token stream means they are found even where the parser gives up.
#pragma once

#include <vector>

#include "Token.h"
#include "compiler/diag/diagnostic.h"
#include "compiler/parse/literals.h"
#include "compiler/parse/parse.h"
#include "compiler/parse/token_source.h"

namespace kq::parse {

/// Reports an input that is too large or not UTF-8. Returns false if it must not be lexed.
bool checkInputText(const SourceFile& file, FileId id, Diagnostics& diags);

/// Reports a malformed literal at its place in `token`.
void reportLiteralError(const LiteralError& error, SourceRange token, Diagnostics& diags);

/// Reports bad characters and literals among all tokens (every channel); a number right
/// before a `:` is left to the AST builder (it may name a module).
void checkTokens(const std::vector<antlr4::Token*>& tokens, const TokenSource& source,
                 Diagnostics& diags);

}  // namespace kq::parse
