// `kq build --ipft`: an extension becomes the object ipftrace2 links into its own
// (../shared/reference/ipft-extension-abi.md). What the object holds:
//   - `__hidden int module(void *ctx, struct sk_buff *skb, __u8 data[64])` in `.text`: it
//     returns 1 when `where` fails, else stores each `select` item in `data` and returns 0.
//     It never reads `ctx`, which differs between ipftrace2's backends (pt_regs, the fentry
//     argument array), and reads the skb with probe reads (CO-RE relocated), which every
//     backend's programs may use;
//   - `struct { ... } __ipft_event_struct` in section `__ipft_skip`, whose BTF names and
//     types the members ipftrace2 prints, with `ipft:fmt:hex` and `ipft:fmt:enum:<ref>` decl
//     tags; each `<ref>` a variable of the enum's type in the same section.
// The backend carries the license, the maps and the programs.
#include <fmt/format.h>

#include <bpf/btf.h>

#include <map>

#include "host/btf_file.h"
#include "compiler/lower/expr_lowering.h"
#include "compiler/lower/lower.h"

namespace kq::lower {
namespace {

using sema::ExtensionMember;

constexpr const char* kEventStruct = "__ipft_event_struct";
constexpr const char* kSkipSection = "__ipft_skip";

class ExtensionObject {
 public:
  ExtensionObject(const sema::CheckedProgram& checked, const sema::ResolvedExtension& ext,
                  const btf::Btf& btf, const SourceFile& source, Diagnostics& diags)
      : checked_(checked), ext_(ext), btf_(btf), source_(source), diags_(diags),
        module_("kq-ipft-extension", source), core_(module_) {
    // ipftrace2's backend object has the license; the extension adds none.
    if (llvm::GlobalVariable* license = module_.module().getGlobalVariable("_license")) {
      license->eraseFromParent();
    }
  }

  void emitModuleFunction();
  void emitEventStruct();
  BpfModule& module() { return module_; }

 private:
  llvm::DIType* memberType(const ExtensionMember& m);
  /// The `__ipft_skip` variable whose enum type ipftrace2 prints `m`'s names from.
  std::string enumReference(const ExtensionMember& m);
  llvm::DISubprogram* moduleSubprogram(uint32_t line);

  const sema::CheckedProgram& checked_;
  const sema::ResolvedExtension& ext_;
  const btf::Btf& btf_;
  const SourceFile& source_;
  Diagnostics& diags_;
  BpfModule module_;
  CoreTypes core_;
  std::map<std::pair<const btf::BtfFile*, btf::TypeId>, std::string> enum_refs_;
};

// int module(void *ctx, struct sk_buff *skb, __u8 *data): ipftrace2's backend declares it
// `extern`, and libbpf's linker compares the two prototypes (the struct by name only).
llvm::DISubprogram* ExtensionObject::moduleSubprogram(uint32_t line) {
  llvm::DIBuilder& di = module_.di();
  llvm::DIFile* file = module_.file();
  llvm::DIType* int_type = di.createBasicType("int", 32, llvm::dwarf::DW_ATE_signed);
  llvm::DIType* void_ptr = di.createPointerType(nullptr, 64);
  auto* sk_buff = di.createStructType(module_.unit(), "sk_buff", file, 0, 0, 0,
                                      llvm::DINode::FlagZero, nullptr, di.getOrCreateArray({}));
  llvm::DIType* skb_ptr = di.createPointerType(sk_buff, 64);
  llvm::DIType* u8 = di.createTypedef(
      di.createBasicType("unsigned char", 8, llvm::dwarf::DW_ATE_unsigned_char), "__u8", file, 0,
      module_.unit());
  llvm::DIType* data_ptr = di.createPointerType(u8, 64);
  auto* type = di.createSubroutineType(di.getOrCreateTypeArray({int_type, void_ptr, skb_ptr, data_ptr}));
  auto* sp = di.createFunction(module_.unit(), "module", "module", file, line, type, line,
                               llvm::DINode::FlagPrototyped, llvm::DISubprogram::SPFlagDefinition);
  di.createParameterVariable(sp, "ctx", 1, file, line, void_ptr, true);
  di.createParameterVariable(sp, "skb", 2, file, line, skb_ptr, true);
  di.createParameterVariable(sp, "data", 3, file, line, data_ptr, true);
  return sp;
}

void ExtensionObject::emitModuleFunction() {
  llvm::LLVMContext& ctx = module_.context();
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  auto* type = llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx), {ptr, ptr, ptr}, false);
  auto* fn = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, "module",
                                    module_.module());
  fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->getArg(0)->setName("ctx");
  fn->getArg(1)->setName("skb");
  fn->getArg(2)->setName("data");
  uint32_t at = ext_.decl->range.begin;
  llvm::DISubprogram* sp = moduleSubprogram(source_.lineColumn(at).line);
  fn->setSubprogram(sp);

  llvm::IRBuilder<> b(ctx);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* body = llvm::BasicBlock::Create(ctx, "body", fn);
  b.SetInsertPoint(entry);
  b.SetCurrentDebugLocation(module_.location(sp, at));
  b.CreateBr(body);  // the entry block keeps the stack slots
  b.SetInsertPoint(body);

  ArgAccess args;
  args.kind = ArgAccess::Kind::Stash;  // the values are at hand: `skb` is argument 0
  args.stashed = {b.CreatePtrToInt(fn->getArg(1), b.getInt64Ty())};
  args.probe_args = &ext_.target.args;
  ExprLowering lower(module_, core_, *checked_.types, b, sp, ext_.exprs, args, 64);
  lower.setKernelBtf(&btf_);

  if (const ast::Expr* where = ext_.decl->clauses.where.get()) {
    auto* keep = llvm::BasicBlock::Create(ctx, "keep", fn);
    auto* drop = llvm::BasicBlock::Create(ctx, "drop", fn);
    b.CreateCondBr(lower.condition(*where), keep, drop);
    b.SetInsertPoint(drop);
    b.CreateRet(b.getInt32(1));  // ipftrace2 drops the event
    b.SetInsertPoint(keep);
  }
  llvm::Value* data = fn->getArg(2);
  for (const ExtensionMember& m : ext_.members) {
    Val v = lower.value(*m.expr);
    llvm::Type* stored = b.getIntNTy(m.size * 8);
    llvm::Value* value = v.v->getType()->isPointerTy() ? b.CreatePtrToInt(v.v, b.getInt64Ty()) : v.v;
    llvm::Value* addr = b.CreateGEP(b.getInt8Ty(), data, b.getInt64(m.offset));
    b.CreateAlignedStore(b.CreateZExtOrTrunc(value, stored), addr, llvm::Align(m.size));
  }
  b.CreateRet(b.getInt32(0));
  for (const LoweringProblem& problem : lower.problems()) {
    diags_.report(DiagKind::Unsupported, problem.range, problem.message);
  }
}

llvm::DIType* ExtensionObject::memberType(const ExtensionMember& m) {
  llvm::DIBuilder& di = module_.di();
  using Shape = ExtensionMember::Shape;
  // A value ipftrace2 prints in hexadecimal is its bits: unsigned.
  bool is_signed = m.is_signed && m.format == ExtensionMember::Format::Plain;
  switch (m.shape) {
    case Shape::Bool: return di.createBasicType("_Bool", 8, llvm::dwarf::DW_ATE_boolean);
    case Shape::Char:
      // ipftrace2 prints a byte as its BTF encoding says; LLVM writes BTF_INT_SIGNED for a
      // signed char only, so `__u8` (`unsigned char`) must stay unsigned: 228, not -28.
      return is_signed ? di.createBasicType("char", 8, llvm::dwarf::DW_ATE_signed_char)
                         : di.createBasicType("unsigned char", 8, llvm::dwarf::DW_ATE_unsigned_char);
    case Shape::Pointer: return di.createPointerType(nullptr, 64);
    case Shape::Int: break;
  }
  const char* names[2][4] = {
      {"unsigned char", "unsigned short", "unsigned int", "long long unsigned int"},
      {"signed char", "short", "int", "long long int"}};
  uint32_t width = m.size == 1 ? 0 : m.size == 2 ? 1 : m.size == 4 ? 2 : 3;
  return di.createBasicType(names[is_signed][width], m.size * 8,
                            is_signed ? llvm::dwarf::DW_ATE_signed : llvm::dwarf::DW_ATE_unsigned);
}

std::string ExtensionObject::enumReference(const ExtensionMember& m) {
  btf::BtfType t = m.enum_type.resolved();
  auto key = std::pair{t.file, t.id};
  if (auto it = enum_refs_.find(key); it != enum_refs_.end()) return it->second;
  std::string name = t.name().empty() ? fmt::format("__kq_enum_{}", enum_refs_.size())
                                      : fmt::format("__kq_enum_{}", t.name());
  enum_refs_[key] = name;

  // The enum as ipftrace2 reads it: BTF_KIND_ENUM, each enumerator a 32-bit value.
  llvm::DIBuilder& di = module_.di();
  const ::btf_type* raw = t.get();
  std::vector<llvm::Metadata*> values;
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    const struct ::btf_enum& e = btf_enum(raw)[i];
    values.push_back(di.createEnumerator(t.file->btf->name(e.name_off), e.val));
  }
  auto* base = di.createBasicType("unsigned int", 32, llvm::dwarf::DW_ATE_unsigned);
  auto* type = di.createEnumerationType(module_.unit(), std::string(t.name()), module_.file(), 0,
                                        32, 32, di.getOrCreateArray(values), base);
  llvm::Type* i32 = llvm::Type::getInt32Ty(module_.context());
  auto* global = new llvm::GlobalVariable(module_.module(), i32, false,
                                          llvm::GlobalValue::ExternalLinkage,
                                          llvm::ConstantInt::get(i32, 0), name);
  global->setSection(kSkipSection);
  global->setAlignment(llvm::Align(4));
  global->addDebugInfo(di.createGlobalVariableExpression(module_.unit(), name, "", module_.file(),
                                                         0, type, false));
  return name;
}

void ExtensionObject::emitEventStruct() {
  llvm::DIBuilder& di = module_.di();
  llvm::LLVMContext& ctx = module_.context();
  uint32_t bytes = 0;
  for (const ExtensionMember& m : ext_.members) bytes = std::max(bytes, m.offset + m.size);
  bytes = (bytes + 7) / 8 * 8;
  // First in its section, the enum references after it: LLVM's BPF backend cannot pad
  // between variables of a section that is not code ("unable to write nop sequence").
  auto* ir_type = llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), bytes);
  auto* global = new llvm::GlobalVariable(module_.module(), ir_type, false,
                                          llvm::GlobalValue::ExternalLinkage,
                                          llvm::Constant::getNullValue(ir_type), kEventStruct);
  global->setSection(kSkipSection);
  global->setAlignment(llvm::Align(8));

  std::vector<llvm::Metadata*> members;
  for (const ExtensionMember& m : ext_.members) {
    std::string tag;
    if (m.format == ExtensionMember::Format::Hex) tag = "ipft:fmt:hex";
    if (m.format == ExtensionMember::Format::Enum) tag = "ipft:fmt:enum:" + enumReference(m);
    llvm::DINodeArray annotations;
    if (!tag.empty()) {
      llvm::Metadata* decl_tag[] = {llvm::MDString::get(ctx, "btf_decl_tag"),
                                    llvm::MDString::get(ctx, tag)};
      annotations = di.getOrCreateArray({llvm::MDNode::get(ctx, decl_tag)});
    }
    members.push_back(di.createMemberType(module_.unit(), m.name, module_.file(), 0, m.size * 8,
                                          m.size * 8, m.offset * 8, llvm::DINode::FlagZero,
                                          memberType(m), annotations));
  }
  auto* type = di.createStructType(module_.unit(), "kq_ipft_event", module_.file(), 0, bytes * 8,
                                   64, llvm::DINode::FlagZero, nullptr,
                                   di.getOrCreateArray(members));
  global->addDebugInfo(di.createGlobalVariableExpression(module_.unit(), kEventStruct, "",
                                                         module_.file(), 0, type, false));
}

}  // namespace

std::optional<EmittedObject> lowerExtension(const sema::CheckedProgram& checked,
                                            const sema::ResolvedExtension& ext,
                                            const btf::Btf& btf, const SourceManager& sources,
                                            FileId main_file, Diagnostics& diags,
                                            std::string* error) {
  ExtensionObject object(checked, ext, btf, sources.file(main_file), diags);
  object.emitModuleFunction();
  object.emitEventStruct();
  if (diags.hasErrors()) return std::nullopt;
  auto emitted = object.module().emit(false, false);
  if (!emitted) {
    for (const CodegenProblem& problem : object.module().problems()) {
      diags.report(DiagKind::ResourceLimit, ext.decl->range,
                   "LLVM cannot compile this extension: " + problem.message);
    }
    if (object.module().problems().empty()) *error = emitted.error().message;
    return std::nullopt;
  }
  return emitted.take();
}

}  // namespace kq::lower
