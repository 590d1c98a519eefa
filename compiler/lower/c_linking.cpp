// `use c "helpers.c"`: the C plugin's bitcode (its own LLVM made it) parsed into the
// module's context and linked in. Each function of the file becomes internal and always
// inlined: the verifier then sees the C code inside the program that calls it, with the
// arguments' bounds known there, and nothing of the file that no query calls survives -O2.
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>

#include "compiler/lower/bpf_module.h"

namespace kq::lower {

Result<llvm::Function*> BpfModule::cFunction(const std::string& bitcode, const std::string& name) {
  if (!linked_c_.count(&bitcode)) {
    auto buffer = llvm::MemoryBuffer::getMemBuffer(bitcode, "use c", false);
    llvm::Expected<std::unique_ptr<llvm::Module>> c = llvm::parseBitcodeFile(*buffer, *context_);
    if (!c) return Error{"the C plugin's bitcode is unreadable: " + llvm::toString(c.takeError())};
    (*c)->setTargetTriple(module_->getTargetTriple());
    (*c)->setDataLayout(module_->getDataLayout());
    std::vector<std::string> defined;
    for (const llvm::Function& f : **c) {
      if (!f.isDeclaration()) defined.push_back(f.getName().str());
    }
    if (llvm::Linker::linkModules(*module_, std::move(*c))) {
      return Error{"the C file's functions clash with the query's code"};
    }
    for (const std::string& f : defined) {
      llvm::Function* fn = module_->getFunction(f);
      if (!fn) continue;
      fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      fn->removeFnAttr(llvm::Attribute::NoInline);
      fn->removeFnAttr(llvm::Attribute::OptimizeNone);
      fn->addFnAttr(llvm::Attribute::AlwaysInline);
    }
    linked_c_[&bitcode] = true;
  }
  llvm::Function* fn = module_->getFunction(name);
  if (!fn) return Error{"the C function `" + name + "` is missing from its file's bitcode"};
  return fn;
}

}  // namespace kq::lower
