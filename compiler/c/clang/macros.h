// The plugin's side of `macros(header, prefix)`.
#pragma once

#include <string>

#include "compiler/c/c_frontend.h"

namespace kq::c {

MacroResult evaluateMacros(const CInput& input, const std::string& prefix);

}  // namespace kq::c
