// KernelTypes and TypeDumper against a kernel made up in a directory: a vmlinux BTF and a
// module's split BTF, built with libbpf's btf__add_* as /sys/kernel/btf would hold them.
#include "host/btf_file.h"
#include "runtime/kernel_types.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "runtime/type_dump.h"

namespace kq::runtime {
namespace {

namespace fs = std::filesystem;

void writeRaw(const ::btf* btf, const fs::path& path) {
  uint32_t size = 0;
  const void* data = btf__raw_data(btf, &size);
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), size);
}

/// vmlinux: `struct sk_buff { unsigned int len; }`, `typedef unsigned char u8`, `u8[16]`.
/// Module `kqmod` on top: `struct kq_mod_conn { unsigned int id; enum kq_mod_state state; }`.
class MadeUpKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kq-btf-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ::btf* base = btf__new_empty();
    int uint = btf__add_int(base, "unsigned int", 4, 0);
    int uchar = btf__add_int(base, "unsigned char", 1, 0);
    int u8 = btf__add_typedef(base, "u8", uchar);
    btf__add_array(base, uint, u8, 16);
    skb_id_ = btf__add_struct(base, "sk_buff", 4);
    btf__add_field(base, "len", uint, 0, 0);
    writeRaw(base, dir_ / "vmlinux");

    ::btf* module = btf__new_empty_split(base);
    int state = btf__add_enum(module, "kq_mod_state", 4);
    btf__add_enum_value(module, "KQ_MOD_OPEN", 1);
    btf__add_enum_value(module, "KQ_MOD_CLOSED", 2);
    conn_id_ = btf__add_struct(module, "kq_mod_conn", 8);
    btf__add_field(module, "id", uint, 0, 0);
    btf__add_field(module, "state", state, 32, 0);
    btf__add_typedef(module, "kq_mod_conn_t", conn_id_);
    writeRaw(module, dir_ / "kqmod");
    btf__free(module);
    btf__free(base);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  int skb_id_ = 0;
  int conn_id_ = 0;
};

TEST_F(MadeUpKernel, FindsTypesByNameInVmlinuxThenModules) {
  KernelTypes types(dir_.string());
  KernelType skb = types.find("struct sk_buff");
  ASSERT_TRUE(skb);
  EXPECT_STREQ(skb.btf->name(skb.btf->type(skb.id)->name_off), "sk_buff");
  KernelType conn = types.find("struct kq_mod_conn");
  ASSERT_TRUE(conn);
  EXPECT_NE(conn.btf, skb.btf);  // the module's split BTF
  EXPECT_EQ(conn.id, static_cast<uint32_t>(conn_id_));
  EXPECT_TRUE(types.find("enum kq_mod_state"));
  // Typedefs are followed to the type they name.
  KernelType typedefed = types.find("kq_mod_conn_t");
  EXPECT_EQ(typedefed.id, conn.id);
  EXPECT_TRUE(btf_is_array(skb.btf->type(types.find("u8[16]").id)));
  EXPECT_FALSE(types.find("u8[15]"));
  EXPECT_FALSE(types.find("struct kq_mod_missing"));
  EXPECT_FALSE(types.find("union sk_buff"));
  EXPECT_FALSE(types.find("enum kq_mod_state[x]"));
}

TEST_F(MadeUpKernel, IdsCountOnlyWhenTheyAreThisKernels) {
  KernelTypes elsewhere(dir_.string());  // compiled against another BTF (`--btf FILE`)
  EXPECT_FALSE(elsewhere.byVmlinuxId(static_cast<uint32_t>(skb_id_)));
  auto vmlinux = host::BtfView::readFile((dir_ / "vmlinux").string());
  ASSERT_TRUE(vmlinux) << vmlinux.error().message;
  {
    KernelTypes here(dir_.string(), vmlinux->get());
    EXPECT_EQ(here.byVmlinuxId(static_cast<uint32_t>(skb_id_)).id, static_cast<uint32_t>(skb_id_));
    EXPECT_FALSE(here.byVmlinuxId(100000));
  }
  // The compiler's copy freed: this kernel's ids, its BTF read again on first use.
  KernelTypes reread(dir_.string(), nullptr, /*ids_are_this_kernels=*/true);
  KernelType skb = reread.byVmlinuxId(static_cast<uint32_t>(skb_id_));
  EXPECT_EQ(skb.id, static_cast<uint32_t>(skb_id_));
  EXPECT_TRUE(skb.btf);
}

TEST_F(MadeUpKernel, DumpsAModuleTypeByNameWhateverItsId) {
  KernelTypes types(dir_.string());
  TypeDumper dumper(&types);
  plan::FieldLayout conn;
  conn.kind = plan::FieldKind::Record;
  conn.size = 8;
  conn.btf_id = 2;  // another kernel's id: not what this kernel calls it
  conn.type_name = "struct kq_mod_conn";
  plan::ProgramLayout layout;
  layout.probes.push_back({"p", 0, 48, {conn}, false});
  dumper.prepare(layout);
  const plan::FieldLayout& field = layout.probes[0].fields[0];
  uint32_t bytes[2] = {7, 2};
  std::string text = dumper.recordText(field, reinterpret_cast<const uint8_t*>(bytes));
  EXPECT_NE(text.find("(struct kq_mod_conn){"), std::string::npos) << text;
  EXPECT_NE(text.find(".id = (unsigned int)7"), std::string::npos) << text;
  EXPECT_NE(text.find(".state = (enum kq_mod_state)KQ_MOD_CLOSED"), std::string::npos) << text;
  // The same dumper again: its casts, made once, reused.
  bytes[0] = 8;
  text = dumper.recordText(field, reinterpret_cast<const uint8_t*>(bytes));
  EXPECT_NE(text.find(".id = (unsigned int)8"), std::string::npos) << text;
  EXPECT_EQ(dumper.recordJson(field, reinterpret_cast<const uint8_t*>(bytes))["state"], "KQ_MOD_CLOSED");

  plan::FieldLayout state;
  state.kind = plan::FieldKind::Enum;
  state.type_name = "enum kq_mod_state";
  EXPECT_EQ(dumper.enumText(state, 1), "KQ_MOD_OPEN");
  EXPECT_EQ(dumper.enumText(state, 5), "5");
  plan::FieldLayout unknown = conn;
  unknown.type_name = "struct kq_gone";
  EXPECT_EQ(dumper.recordText(unknown, reinterpret_cast<const uint8_t*>(bytes)),
            "(no type `struct kq_gone` in this kernel)");
}

}  // namespace
}  // namespace kq::runtime
