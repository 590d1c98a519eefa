// `use "myapp.h"`: a C header's structs, unions, enums and typedefs as BTF kq types, kept
// apart from the kernel's. Clang (the plugin) writes them into an object's .BTF section;
// that object is kept under $XDG_CACHE_HOME/kq by the header's content, so a header read
// before costs neither Clang nor the plugin, and in one process the BTF is read once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/btf/btf.h"
#include "compiler/c/c_frontend.h"
#include "compiler/diag/result.h"

namespace kq::c {

struct HeaderTypes {
  /// The types the header itself defines, as C names them: `struct req`, `enum color`,
  /// `req_t`. The BTF they are in lives as long as the process.
  std::map<std::string, btf::BtfType, std::less<>> defined;
};

struct HeaderTypesAnswer {
  bool found = false;
  std::vector<CDiagnostic> diagnostics;
  const HeaderTypes* types = nullptr;  // set when found without errors
};

/// The types of header `input.file`; an Error when the plugin is missing or the object
/// cannot be written or read.
Result<HeaderTypesAnswer> headerTypes(const CInput& input);

}  // namespace kq::c
