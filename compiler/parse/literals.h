// Decoding of number and string literals, shared by the lexical checks (which report every
// bad literal before parsing) and the AST builder (which only sees literals that passed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostic.h"

namespace kq::parse {

struct DecodedNumber {
  uint64_t value = 0;
  ast::NumberUnit unit = ast::NumberUnit::None;
};

/// A problem in a literal, at a byte offset range relative to the literal's start.
struct LiteralError {
  DiagKind kind;
  uint32_t begin;
  uint32_t end;
  std::string message;
  std::string hint;  // empty when there is nothing more to say
};

/// Decodes `0xff`, `0o17`, `0b1010`, `42`, `10ms`, `4k`, `99hz`, or says what is wrong.
std::variant<DecodedNumber, LiteralError> decodeNumber(std::string_view text);

struct DecodedString {
  std::string value;
  std::vector<LiteralError> errors;
};

/// Decodes a string literal including its quotes, collecting every bad escape.
DecodedString decodeString(std::string_view text);

}  // namespace kq::parse
