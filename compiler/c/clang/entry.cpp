// The plugin's entry point: kq dlopens libkq-c.so and calls kq_c_frontend once.
#include <llvm/Support/TargetSelect.h>

#include "compiler/c/c_frontend.h"
#include "compiler/c/clang/compile_c.h"
#include "compiler/c/clang/header_types.h"
#include "compiler/c/clang/macros.h"

namespace kq::c {
namespace {

class ClangFrontend : public CFrontend {
 public:
  MacroResult macros(const CInput& input, const std::string& prefix) override {
    return evaluateMacros(input, prefix);
  }
  HeaderTypesResult headerTypes(const CInput& input, const std::string& object_path) override {
    return compileHeaderTypes(input, object_path);
  }
  CCompileResult compileC(const CInput& input) override { return compileCFile(input); }
  CObjectResult compileObject(const CInput& input, const std::vector<std::string>& args,
                              const std::string& object_path) override {
    return compileCObject(input, args, object_path);
  }
};

}  // namespace
}  // namespace kq::c

extern "C" __attribute__((visibility("default"))) kq::c::CFrontend* kq_c_frontend(
    uint32_t version) {
  if (version != kq::c::kInterfaceVersion) return nullptr;
  static kq::c::ClangFrontend frontend;
  return &frontend;
}
