// C declarations of BTF types (`kq info`'s members, typed dumps' casts), for types built in
// memory with libbpf's btf__add_*.
#include "host/c_declaration.h"
#include "host/btf_file.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

namespace kq::host {
namespace {

/// A copy of what libbpf built, as kq reads BTF.
std::unique_ptr<BtfView> viewOf(const ::btf* btf) { return BtfView::copyOf(btf).take(); }

TEST(CDeclarations, AreWrittenAsCDeclaresThem) {
  ::btf* btf = btf__new_empty();
  int ch = btf__add_int(btf, "char", 1, BTF_INT_SIGNED);
  int uint = btf__add_int(btf, "unsigned int", 4, 0);
  int cchar = btf__add_const(btf, ch);
  int str = btf__add_ptr(btf, cchar);
  int const_ptr = btf__add_const(btf, btf__add_ptr(btf, ch));
  int skb = btf__add_struct(btf, "sk_buff", 0);
  int skb_ptr = btf__add_ptr(btf, skb);
  int proto = btf__add_func_proto(btf, 0);
  btf__add_func_param(btf, "", skb_ptr);
  int handler = btf__add_ptr(btf, proto);
  int no_args = btf__add_ptr(btf, btf__add_func_proto(btf, uint));
  int ptrs = btf__add_array(btf, uint, skb_ptr, 2);
  int row = btf__add_ptr(btf, btf__add_array(btf, uint, uint, 4));
  int anon = btf__add_struct(btf, nullptr, 0);
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), str, "name"), "const char *name");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), const_ptr, "p"), "char *const p");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), handler, "destructor"), "void (*destructor)(struct sk_buff *)");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), no_args, "f"), "unsigned int (*f)(void)");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), ptrs, "maps"), "struct sk_buff *maps[2]");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), row, "r"), "unsigned int (*r)[4]");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), anon, "headers"), "struct {...} headers");
  // A dump's casts: no qualifiers, no names, anonymous types by their keyword.
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), str, "", DeclarationStyle::Cast), "char *");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), const_ptr, "", DeclarationStyle::Cast), "char *");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), handler, "", DeclarationStyle::Cast), "void (*)(struct sk_buff *)");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), ptrs, "", DeclarationStyle::Cast), "struct sk_buff *[2]");
  EXPECT_EQ(cDeclaration(viewOf(btf).get(), anon, "", DeclarationStyle::Cast), "struct");
  btf__free(btf);
}

}  // namespace
}  // namespace kq::host
