#include <bpf/btf.h>

#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "compiler/btf/btf.h"

namespace kq::btf {
namespace {

/// A BTF file named `name` holding one record, `struct|union tag` of `size` bytes.
struct OneRecord {
  std::unique_ptr<Btf> btf;
  TypeId id;

  OneRecord(const char* name, const char* tag, uint32_t size, bool is_union = false) {
    ::btf* raw = btf__new_empty();
    int u8 = btf__add_int(raw, "unsigned char", 1, 0);
    id = static_cast<TypeId>(is_union ? btf__add_union(raw, tag, size) : btf__add_struct(raw, tag, size));
    btf__add_field(raw, "hook", u8, 0, 0);
    btf = Btf::adopt(raw, name);
  }
  BtfType type() const { return BtfType{&btf->vmlinux(), id}; }
};

TEST(SameRecord, OneStructInTwoFilesIsOneType) {
  // nf_tables' BTF may keep a copy of vmlinux's `struct nf_hook_state`.
  OneRecord vmlinux("vmlinux", "nf_hook_state", 16), module("nf_tables", "nf_hook_state", 16);
  EXPECT_TRUE(sameRecord(vmlinux.type(), vmlinux.type()));
  EXPECT_TRUE(sameRecord(vmlinux.type(), module.type()));
}

TEST(SameRecord, TagSizeAndKindTellRecordsApart) {
  OneRecord state("vmlinux", "nf_hook_state", 16);
  EXPECT_FALSE(sameRecord(state.type(), OneRecord("m", "nft_pktinfo", 16).type()));
  EXPECT_FALSE(sameRecord(state.type(), OneRecord("m", "nf_hook_state", 24).type()));
  EXPECT_FALSE(sameRecord(state.type(), OneRecord("m", "nf_hook_state", 16, true).type()));
  // Anonymous records have no tag to be known by.
  EXPECT_FALSE(sameRecord(OneRecord("a", "", 16).type(), OneRecord("b", "", 16).type()));
}

TEST(SameRecord, AHeadersStructIsNeverTheKernels) {
  OneRecord kernel("vmlinux", "nf_hook_state", 16), header("myapp.h", "nf_hook_state", 16);
  header.btf->markUserSpace();
  EXPECT_FALSE(sameRecord(kernel.type(), header.type()));
}

}  // namespace
}  // namespace kq::btf
