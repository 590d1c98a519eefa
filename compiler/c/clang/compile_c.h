// The plugin's side of `use c "helpers.c"`.
#pragma once

#include "compiler/c/c_frontend.h"

namespace kq::c {

CCompileResult compileCFile(const CInput& input);
CObjectResult compileCObject(const CInput& input, const std::vector<std::string>& args,
                             const std::string& object_path);

}  // namespace kq::c
