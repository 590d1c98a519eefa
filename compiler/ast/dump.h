// `kq --dump ast`: the AST as an indented tree, one node per line.
#pragma once

#include <ostream>
#include <string>

#include "compiler/ast/ast.h"

namespace kq::ast {

void dumpScript(const Script& script, std::ostream& out);

std::string_view spell(UnaryOp op);
std::string_view spell(BinaryOp op);
/// `struct sock *`, `unsigned long`.
std::string spell(const TypeName& type);

}  // namespace kq::ast
