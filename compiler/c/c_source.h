// `use c "helpers.c"`: a C file compiled by the plugin into bitcode for the BPF target,
// kept for the process by the file's path and bytes: the REPL's second use of a file costs
// a read and a hash, and does not touch Clang.
#pragma once

#include <memory>
#include <string>

#include "compiler/c/c_frontend.h"
#include "compiler/diag/result.h"

namespace kq::c {

struct CompiledC {
  CCompileResult result;
  std::shared_ptr<const std::string> bitcode;  // result.bitcode, shared with the functions
};

/// The compiled file (found or not, with Clang's errors); an Error when the plugin is
/// missing.
Result<const CompiledC*> compileCSource(const CInput& input);

}  // namespace kq::c
