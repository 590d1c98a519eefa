// Checks that a BTF blob's types refer only to types that exist, and of the kinds their
// users expect, before anything walks them: libbpf (1.1) parses files whose type ids point
// past the last type or whose FUNC is no FUNC_PROTO, and everything above would crash.
// In host/ because both sides read BTF from files: the compiler a `--btf FILE`, the runtime
// the BTF of an object `kq run` is given (runtime/object_check.cpp).
#pragma once

#include <string>

namespace kq::host {
class BtfView;
}

namespace kq::host {

/// Empty when every type of `btf` (from its first own id, after any base BTF) is well
/// formed; otherwise what the first broken type is, for an error message.
std::string findMalformedType(const host::BtfView* btf);

}  // namespace kq::host
