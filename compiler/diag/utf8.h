// UTF-8 as kq reads it: the lexer refuses input that is not, and diagnostics show such
// bytes escaped, both by this one definition.
#pragma once

#include <cstddef>
#include <string_view>

namespace kq {

/// The length of the valid UTF-8 sequence at `text[i]`, or 0 if the bytes there are not
/// UTF-8 (overlong forms, surrogates and code points past U+10FFFF included).
size_t validUtf8Length(std::string_view text, size_t i);

}  // namespace kq
