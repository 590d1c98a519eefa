// A BTF type written as C, for both phases: `kq info`'s members and prototypes, and the casts
// of typed dumps (`(struct sk_buff *)`, `(void (*)(struct callback_head *))`, `(char[16])`).
// kq's own printer: libbpf's btf_dump allocates state for every type of the BTF each time one
// is made, which cost `kq info 'struct sk_buff'` a dumper per member.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kq::host {
class BtfView;
}

namespace kq::host {

enum class DeclarationStyle {
  Full,  // as declared: `const char *name`
  Cast,  // a dump's cast: no qualifiers (`char *`), anonymous types by their keyword (`struct`)
};

/// Type `id` of `btf` declaring `name` (empty: the type alone, as in a cast), in C's
/// declarator syntax: `char cb[48]`, `struct sk_buff *next`, `void (*destructor)(struct sk_buff *)`.
std::string cDeclaration(const host::BtfView* btf, uint32_t id, std::string_view name,
                         DeclarationStyle style = DeclarationStyle::Full);

}  // namespace kq::host
