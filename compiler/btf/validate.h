// Checks that a BTF blob's types refer only to types that exist, and of the kinds their
// users expect, before anything walks them: libbpf (1.1) parses files whose type ids point
// past the last type or whose FUNC is no FUNC_PROTO, and everything above would crash.
#pragma once

#include <string>

#include "compiler/diag/result.h"

struct btf;

namespace kq::btf {

/// Empty when every type of `btf` (from its first own id, after any base BTF) is well
/// formed; otherwise what the first broken type is, for an error message.
std::string findMalformedType(const ::btf* btf);

}  // namespace kq::btf
