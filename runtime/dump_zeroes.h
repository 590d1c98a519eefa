// Leaving zeroes out of a typed dump, as ksnoop does: libbpf's own `emit_zeroes = false`
// (libbpf 1.1) drops a nested struct whose first members are zero even when later ones are
// not (`struct sock`'s `__sk_common` of an unconnected socket vanished). kq asks libbpf for
// every member and prunes the text itself: zero members, arrays of zeroes, and then the
// structs and unions left with nothing in them.
#pragma once

#include <string>

namespace kq::runtime {

/// `dump` (btf_dump's text with emit_zeroes) without its zero members and empty blocks.
std::string withoutZeroes(const std::string& dump);

}  // namespace kq::runtime
