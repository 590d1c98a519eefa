// A call of a `use c` function: kq's 64-bit values narrowed (or turned into pointers) to
// the C parameters' types, the result widened back by its C signedness. Part of
// ExprLowering (expr_lowering.h).
#include "compiler/lower/expr_lowering.h"

namespace kq::lower {

Val ExprLowering::cCall(const ast::Call& c, const sema::ExprInfo& ei) {
  const sema::CFunction& fn = *ei.c_function;
  std::vector<Val> values;
  for (const ast::ExprPtr& a : c.args) values.push_back(value(*a));
  at(c);
  Result<llvm::Function*> callee = module_.cFunction(*fn.bitcode, fn.name);
  if (!callee) return problem(callee.error().message, ei.type);
  llvm::FunctionType* type = (*callee)->getFunctionType();
  if (type->getNumParams() != values.size()) {
    return problem("the C function's bitcode takes another number of arguments", ei.type);
  }
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < values.size(); ++i) {
    llvm::Value* v = values[i].v;
    llvm::Type* want = type->getParamType(static_cast<unsigned>(i));
    if (want->isPointerTy()) {
      args.push_back(v->getType()->isPointerTy() ? v : b_.CreateIntToPtr(v, want));
    } else if (v->getType()->isPointerTy()) {
      args.push_back(b_.CreatePtrToInt(v, want));
    } else {
      bool is_signed = values[i].type && values[i].type->kind == sema::TypeKind::Int &&
                       values[i].type->is_signed;
      args.push_back(b_.CreateIntCast(v, want, is_signed));
    }
  }
  llvm::Value* result = b_.CreateCall(*callee, args);
  llvm::Type* ret = type->getReturnType();
  if (ret->isPointerTy()) return Val{b_.CreatePtrToInt(result, b_.getInt64Ty()), ei.type};
  return Val{b_.CreateIntCast(result, b_.getInt64Ty(), fn.return_type->is_signed), ei.type};
}

}  // namespace kq::lower
