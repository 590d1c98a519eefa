#include "compiler/lower/core_values.h"

#include <bpf/btf.h>
#include <llvm/IR/IntrinsicsBPF.h>

#include <fmt/format.h>

namespace kq::lower {
namespace {

// LLVM's flags for the type and enum intrinsics (BPFCoreSharedInfo): SIZE and VALUE.
constexpr uint64_t kPreserveTypeInfoSize = 1;
constexpr uint64_t kPreserveEnumValue = 1;

bool isAccessIndexCall(llvm::Value* v) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(v);
  llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
  if (!callee) return false;
  llvm::Intrinsic::ID id = callee->getIntrinsicID();
  return id == llvm::Intrinsic::preserve_struct_access_index ||
         id == llvm::Intrinsic::preserve_union_access_index ||
         id == llvm::Intrinsic::preserve_array_access_index;
}

}  // namespace

llvm::Value* accessChainRoot(llvm::Value* field) {
  while (isAccessIndexCall(field)) field = llvm::cast<llvm::CallInst>(field)->getArgOperand(0);
  return field;
}

llvm::Value* fieldInfo(llvm::IRBuilder<>& b, llvm::Value* field, FieldInfo kind) {
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(
      b.GetInsertBlock()->getModule(), llvm::Intrinsic::bpf_preserve_field_info, {field->getType()});
  llvm::Value* info = b.CreateCall(fn, {field, b.getInt64(static_cast<uint64_t>(kind))});
  return b.CreateZExt(info, b.getInt64Ty());
}

llvm::Value* typeSize(llvm::IRBuilder<>& b, CoreTypes& core, btf::BtfType record) {
  btf::BtfType t = record.resolved();
  if (t.id == 0 || t.name().empty() || !btf_is_composite(t.get())) return nullptr;
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(),
                                                       llvm::Intrinsic::bpf_preserve_type_info);
  llvm::CallInst* size =
      b.CreateCall(fn, {b.getInt32(core.nextSequence()), b.getInt64(kPreserveTypeInfoSize)});
  size->setMetadata(llvm::LLVMContext::MD_preserve_access_index, core.record(t).di);
  return b.CreateZExt(size, b.getInt64Ty());
}

llvm::Value* enumValue(llvm::IRBuilder<>& b, CoreTypes& core, btf::BtfType enum_type,
                       std::string_view name, int64_t value) {
  llvm::DICompositeType* di = core.relocatableEnum(enum_type);
  if (!di) return b.getInt64(value);
  // As clang does: the enumerator is named by a string "NAME:VALUE" (the value is the
  // default when nothing relocates it), the enum by the call's metadata.
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto* text = llvm::ConstantDataArray::getString(m->getContext(), fmt::format("{}:{}", name, value));
  auto* global = new llvm::GlobalVariable(*m, text->getType(), true,
                                          llvm::GlobalValue::PrivateLinkage, text, ".enumval");
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  llvm::Function* fn =
      llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::bpf_preserve_enum_value);
  llvm::CallInst* v = b.CreateCall(
      fn, {b.getInt32(core.nextSequence()), global, b.getInt64(kPreserveEnumValue)});
  v->setMetadata(llvm::LLVMContext::MD_preserve_access_index, di);
  return v;
}

}  // namespace kq::lower
