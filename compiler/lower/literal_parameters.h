// Literals that a live site's programs read from the object's .rodata rather than from
// their code: each integer or string literal that a `where` compares with a value known only
// when the event happens. The same question asked again of other values (`where comm ==
// "nginx"`, then `"redis"`) then loads the object compiled the first time: the object cache
// keys it by the query's shape (LiteralParameters::shape, driver/object_cache.h), and the
// copy that is loaded gets this query's values (setLiteralParameters). The kernel's verifier
// reads a frozen .rodata as constants, so it checks the code as if they were immediates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/source.h"
#include "compiler/sema/program.h"

namespace kq::lower {

/// One literal and where its value is among the parameters' bytes.
struct LiteralParameter {
  const ast::Expr* literal = nullptr;
  uint32_t offset = 0;  // 8-aligned
  /// An integer's 8 bytes; a string's bytes as they are compared (its NUL too, unless it
  /// is a `~` prefix), rounded up to 8.
  uint32_t size = 0;
  /// What the code depends on besides the value: an integer's type, a string's length.
  std::string kind;
};

struct LiteralParameters {
  std::vector<LiteralParameter> params;
  std::vector<uint8_t> bytes;  // every value, at its offset

  bool empty() const { return params.empty(); }
  const LiteralParameter* find(const ast::Expr& literal) const;
  /// `text` (the main file's) with each parameter's characters masked, then what else of
  /// the parameters decides the code: each one's kind, type and length, and which ones are
  /// equal (a value written twice may be read once, lowering shares what is the same).
  std::string shape(std::string_view text) const;
};

/// The parameters of `program`: the literals of its main file that a query's or a join's
/// `where` compares (`==`, `!=`, `<`, `<=`, `>`, `>=`, `~`) with an integer or a string
/// known only when the event happens, in the order they are written.
LiteralParameters literalParameters(const sema::Program& program, FileId main_file);

/// The symbol of the parameters in an object's .rodata.
inline constexpr std::string_view kLiteralParametersSymbol = "kq_params";

/// Writes `bytes` over the parameters of the compiled object `elf`; false (and `elf`
/// unchanged) when it holds no parameters of that size.
bool setLiteralParameters(std::vector<char>& elf, const std::vector<uint8_t>& bytes);

}  // namespace kq::lower
