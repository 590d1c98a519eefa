// The plugin's side of `use "header.h"`: the header's types as BTF in an object.
#pragma once

#include <string>

#include "compiler/c/c_frontend.h"

namespace kq::c {

HeaderTypesResult compileHeaderTypes(const CInput& input, const std::string& object_path);

}  // namespace kq::c
