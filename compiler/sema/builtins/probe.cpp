// Functions about the probe itself: `entry(x)`, in an exit probe, is `x` evaluated when the
// function was entered (the caller's uid before a setuid, an argument's field before the
// call changed it), kept with the arguments the entry program saves.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

const Type* checkEntry(BuiltinCall& c) {
  const Type* t = c.args[0];
  if (!(t->isError() || t->isInteger() || t->isPointer() || t->kind == TypeKind::Bool ||
        t->kind == TypeKind::Enum)) {
    return c.badArgument(0, "a number or a pointer (kept in 8 bytes)");
  }
  return t;
}

}  // namespace

void addProbeFunctions(std::vector<BuiltinFunction>& out) {
  out.push_back({"entry", BuiltinFn::Entry, 1, 1, checkEntry, "entry(x)",
                 "at a function's exit, `x` as it was when the function was entered", nullptr,
                 std::nullopt, Needs::Exit});
}

}  // namespace kq::sema
