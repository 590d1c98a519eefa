// The plugin's side of `use c "helpers.c"`.
#pragma once

#include "compiler/c/c_frontend.h"

namespace kq::c {

CCompileResult compileCFile(const CInput& input);

}  // namespace kq::c
