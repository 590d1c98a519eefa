// `kq build --ipft` objects checked with libbpf for the shape ipftrace2 reads
// (../shared/reference/ipft-extension-abi.md): a hidden global `module()` in `.text` with
// the prototype the backends declare, no license of its own, and `__ipft_event_struct` in
// `__ipft_skip` whose members, types and decl tags say how to print `data`.
#include <bpf/btf.h>
#include <elf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "compiler/lower/lower.h"
#include "compiler/parse/parse.h"
#include "tests/support/fake_kernel.h"

namespace kq::lower {
namespace {

class IpftExtensionTest : public ::testing::Test {
 protected:
  std::unique_ptr<btf::Btf> kernel_btf_ = testing::fakeBtf();
  std::unique_ptr<host::KernelInfo> kernel_ = testing::fakeKernelInfo();
  std::vector<char> elf_;
  ::btf* btf_ = nullptr;

  void TearDown() override { btf__free(btf_); }

  void build(const std::string& text) {
    SourceManager sources;
    FileId file = sources.add("<input>", text);
    Diagnostics diags;
    auto script = parse::parseScript(sources, file, diags);
    ASSERT_TRUE(script);
    auto checked = sema::analyze(*script, sources, *kernel_btf_, *kernel_, diags);
    ASSERT_TRUE(checked) << diags.all().size();
    ASSERT_EQ(checked->program.extensions.size(), 1u);
    std::string error;
    auto object = lowerExtension(*checked, checked->program.extensions.front(), *kernel_btf_,
                                 sources, file, diags, &error);
    ASSERT_TRUE(object) << error;
    elf_ = object->elf;
    char path[] = "/tmp/kq-ipft-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, elf_.data(), elf_.size()), static_cast<ssize_t>(elf_.size()));
    close(fd);
    btf_ = btf__parse_elf(path, nullptr);
    unlink(path);
    ASSERT_NE(btf_, nullptr);
  }

  const btf_type* type(uint32_t id) const { return btf__type_by_id(btf_, id); }
  std::string name(const btf_type* t) const { return btf__name_by_offset(btf_, t->name_off); }
  const btf_type* find(const char* n, int kind) const {
    int id = btf__find_by_name_kind(btf_, n, kind);
    return id > 0 ? type(static_cast<uint32_t>(id)) : nullptr;
  }

  /// The ELF symbol `n`: its binding, visibility and section name.
  struct Symbol {
    int bind = -1, visibility = -1;
    std::string section;
  };
  Symbol symbol(const std::string& n) const {
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(elf_.data());
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(elf_.data() + eh->e_shoff);
    const char* shstr = elf_.data() + sh[eh->e_shstrndx].sh_offset;
    Symbol out;
    for (int s = 0; s < eh->e_shnum; ++s) {
      if (sh[s].sh_type != SHT_SYMTAB) continue;
      const char* str = elf_.data() + sh[sh[s].sh_link].sh_offset;
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(elf_.data() + sh[s].sh_offset);
      for (size_t i = 0; i < sh[s].sh_size / sizeof(Elf64_Sym); ++i) {
        if (n != str + syms[i].st_name) continue;
        out.bind = ELF64_ST_BIND(syms[i].st_info);
        out.visibility = ELF64_ST_VISIBILITY(syms[i].st_other);
        out.section = shstr + sh[syms[i].st_shndx].sh_name;
      }
    }
    return out;
  }
  bool hasSection(const std::string& n) const {
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(elf_.data());
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(elf_.data() + eh->e_shoff);
    const char* shstr = elf_.data() + sh[eh->e_shstrndx].sh_offset;
    for (int s = 0; s < eh->e_shnum; ++s) {
      if (n == shstr + sh[s].sh_name) return true;
    }
    return false;
  }
};

TEST_F(IpftExtensionTest, ModuleIsAHiddenGlobalFunctionWithTheBackendsPrototype) {
  build("extension where l4proto == 6 select skb->len as len");
  Symbol module = symbol("module");
  EXPECT_EQ(module.bind, STB_GLOBAL);
  EXPECT_EQ(module.visibility, STV_HIDDEN);
  EXPECT_EQ(module.section, ".text");
  EXPECT_FALSE(hasSection("license"));  // the backend's

  const btf_type* fn = find("module", BTF_KIND_FUNC);
  ASSERT_NE(fn, nullptr);
  const btf_type* proto = type(fn->type);
  ASSERT_TRUE(btf_is_func_proto(proto));
  ASSERT_EQ(btf_vlen(proto), 3);
  const btf_param* params = btf_params(proto);
  EXPECT_EQ(btf__name_by_offset(btf_, params[0].name_off), std::string("ctx"));
  const btf_type* ctx = type(params[0].type);
  ASSERT_TRUE(btf_is_ptr(ctx));
  EXPECT_EQ(ctx->type, 0u);  // void *
  const btf_type* skb = type(type(params[1].type)->type);
  EXPECT_TRUE(btf_is_struct(skb));
  EXPECT_EQ(name(skb), "sk_buff");  // libbpf's linker matches it by name
  const btf_type* data = type(btf__resolve_type(btf_, type(params[2].type)->type));
  ASSERT_TRUE(btf_is_int(data));
  EXPECT_EQ(btf_int_bits(data), 8);
  const btf_type* ret = type(proto->type);
  ASSERT_TRUE(btf_is_int(ret));
  EXPECT_EQ(ret->size, 4u);
}

TEST_F(IpftExtensionTest, EventStructDescribesTheData) {
  build("extension select skb->len as len, hex(mark) as mark, (enum sock_type)2 as type, "
        "skb->dev as dev, skb->len > 1 as big, (long)skb->len as wide");
  const btf_type* var = find("__ipft_event_struct", BTF_KIND_VAR);
  ASSERT_NE(var, nullptr);
  const btf_type* sec = find("__ipft_skip", BTF_KIND_DATASEC);
  ASSERT_NE(sec, nullptr);
  int event_var = btf__find_by_name_kind(btf_, "__ipft_event_struct", BTF_KIND_VAR);
  bool in_section = false;
  for (uint16_t i = 0; i < btf_vlen(sec); ++i) {
    in_section = in_section || btf_var_secinfos(sec)[i].type == static_cast<uint32_t>(event_var);
  }
  EXPECT_TRUE(in_section);

  uint32_t struct_id = var->type;
  const btf_type* st = type(struct_id);
  ASSERT_TRUE(btf_is_struct(st));
  struct Expected {
    const char* name;
    uint32_t byte_offset;
    int kind;
    uint32_t bits;
    bool is_signed;
  };
  const Expected expected[] = {
      {"len", 0, BTF_KIND_INT, 32, false},  {"mark", 4, BTF_KIND_INT, 32, false},
      {"type", 8, BTF_KIND_INT, 32, false}, {"dev", 16, BTF_KIND_PTR, 64, false},
      {"big", 24, BTF_KIND_INT, 8, false},  {"wide", 32, BTF_KIND_INT, 64, true},
  };
  ASSERT_EQ(btf_vlen(st), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const btf_member& m = btf_members(st)[i];
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(btf__name_by_offset(btf_, m.name_off), std::string(expected[i].name));
    EXPECT_EQ(m.offset, expected[i].byte_offset * 8);
    const btf_type* t = type(btf__resolve_type(btf_, m.type));
    EXPECT_EQ(btf_kind(t), expected[i].kind);
    if (btf_is_int(t)) {
      EXPECT_EQ(btf_int_bits(t), expected[i].bits);
      EXPECT_EQ((btf_int_encoding(t) & BTF_INT_SIGNED) != 0, expected[i].is_signed);
    }
  }
  EXPECT_TRUE(btf_int_encoding(type(btf__resolve_type(btf_, btf_members(st)[4].type))) & BTF_INT_BOOL);

  // Decl tags on members: hex(mark), and the enum's names through a reference variable.
  std::map<int, std::string> tags;
  for (uint32_t id = 1; id < btf__type_cnt(btf_); ++id) {
    const btf_type* t = type(id);
    if (!btf_is_decl_tag(t)) continue;
    EXPECT_EQ(t->type, struct_id);
    tags[btf_decl_tag(t)->component_idx] = name(t);
  }
  EXPECT_EQ(tags, (std::map<int, std::string>{{1, "ipft:fmt:hex"},
                                               {2, "ipft:fmt:enum:__kq_enum_sock_type"}}));
  const btf_type* ref = find("__kq_enum_sock_type", BTF_KIND_VAR);
  ASSERT_NE(ref, nullptr);
  const btf_type* e = type(ref->type);
  ASSERT_EQ(btf_kind(e), BTF_KIND_ENUM);
  std::map<std::string, int32_t> values;
  for (uint16_t i = 0; i < btf_vlen(e); ++i) {
    values[btf__name_by_offset(btf_, btf_enum(e)[i].name_off)] = btf_enum(e)[i].val;
  }
  EXPECT_EQ(values, (std::map<std::string, int32_t>{{"SOCK_STREAM", 1}, {"SOCK_DGRAM", 2}}));
}

TEST_F(IpftExtensionTest, BytesKeepTheirSignedness) {
  // ipftrace2 prints an 8-bit integer as its BTF encoding says: a `__u8` (`unsigned char`,
  // as `iphdr->protocol` and `tos` are) of 228 printed as -28 when every byte was `char`.
  build("use net\nextension select iphdr(skb)->protocol as proto, (char)skb->len as c, "
        "(signed char)skb->len as sc, (unsigned char)skb->len as uc, hex((char)skb->len) as hc");
  const btf_type* var = find("__ipft_event_struct", BTF_KIND_VAR);
  ASSERT_NE(var, nullptr);
  const btf_type* st = type(var->type);
  ASSERT_TRUE(btf_is_struct(st));
  const std::pair<const char*, bool> expected[] = {
      {"proto", false}, {"c", true}, {"sc", true}, {"uc", false}, {"hc", false}};
  ASSERT_EQ(btf_vlen(st), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const btf_member& m = btf_members(st)[i];
    SCOPED_TRACE(expected[i].first);
    EXPECT_EQ(btf__name_by_offset(btf_, m.name_off), std::string(expected[i].first));
    const btf_type* t = type(btf__resolve_type(btf_, m.type));
    ASSERT_TRUE(btf_is_int(t));
    EXPECT_EQ(btf_int_bits(t), 8u);
    EXPECT_EQ((btf_int_encoding(t) & BTF_INT_SIGNED) != 0, expected[i].second);
  }
}

}  // namespace
}  // namespace kq::lower
