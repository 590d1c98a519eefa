// BtfView: raw BTF read where it lies answers as libbpf's parse of the same bytes does, for
// made-up BTF, split BTF on top of it, and every type of the running kernel's.
#include "host/btf_file.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace kq::host {
namespace {

class BtfFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kq-btf-file-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ::btf* base = btf__new_empty();
    int_id_ = btf__add_int(base, "int", 4, BTF_INT_SIGNED);
    struct_id_ = btf__add_struct(base, "kq_made_up", 8);
    btf__add_field(base, "a", int_id_, 0, 0);
    btf__add_field(base, "b", int_id_, 32, 0);
    int array = btf__add_array(base, int_id_, int_id_, 3);
    typedef_id_ = btf__add_typedef(base, "kq_three", array);
    write(dir_ / "vmlinux", base);
    ::btf* module = btf__new_empty_split(base);
    btf__add_struct(module, "kq_module_type", 4);
    btf__add_field(module, "made_up", struct_id_, 0, 0);
    write(dir_ / "module", module);
    btf__free(module);
    btf__free(base);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static void write(const std::filesystem::path& path, const ::btf* btf) {
    uint32_t size = 0;
    const void* data = btf__raw_data(btf, &size);
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }

  std::filesystem::path dir_;
  int int_id_ = 0;
  int struct_id_ = 0;
  int typedef_id_ = 0;
};

TEST_F(BtfFile, ReadsRawBtfWithItsTypes) {
  auto btf = BtfView::readFile(dir_ / "vmlinux");
  ASSERT_TRUE(btf) << btf.error().message;
  const BtfView& vmlinux = **btf;
  EXPECT_EQ(vmlinux.typeCount(), 5u);
  EXPECT_EQ(vmlinux.findByNameKind("kq_made_up", BTF_KIND_STRUCT), struct_id_);
  EXPECT_EQ(vmlinux.findByNameKind("kq_made_up", BTF_KIND_UNION), -ENOENT);
  EXPECT_EQ(vmlinux.resolveSize(struct_id_), 8);
  EXPECT_EQ(vmlinux.resolveSize(typedef_id_), 12);  // int[3]
  EXPECT_STREQ(vmlinux.name(vmlinux.type(struct_id_)->name_off), "kq_made_up");
  EXPECT_EQ(vmlinux.type(100), nullptr);
  EXPECT_STREQ(vmlinux.name(1u << 30), "");
  EXPECT_FALSE(vmlinux.hasString(1u << 30));

  auto module = BtfView::readFile(dir_ / "module", &vmlinux);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ((*module)->firstId(), 5u);
  EXPECT_EQ((*module)->findByNameKind("kq_module_type", BTF_KIND_STRUCT), 5);
  EXPECT_EQ((*module)->findByNameKind("kq_made_up", BTF_KIND_STRUCT), struct_id_);
  const ::btf_type* own = (*module)->type(5);
  EXPECT_STREQ((*module)->name(own->name_off), "kq_module_type");
  EXPECT_STREQ((*module)->name(btf_members(own)[0].name_off), "made_up");
  EXPECT_EQ((*module)->resolveSize(btf_members(own)[0].type), 8);
}

TEST_F(BtfFile, SaysWhyAFileIsNotBtf) {
  auto missing = BtfView::readFile(dir_ / "missing");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
  {
    FILE* f = std::fopen((dir_ / "text").c_str(), "wb");
    std::fputs("not BTF at all, just some words in a file\n", f);
    std::fclose(f);
  }
  auto text = BtfView::readFile(dir_ / "text");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("magic number"), std::string::npos) << text.error().message;
  // Every length of a real BTF cut short is refused, none read past its end.
  auto whole = BtfView::readFile(dir_ / "vmlinux");
  ASSERT_TRUE(whole);
  std::string_view bytes = (*whole)->bytes();
  for (size_t size = 0; size < bytes.size(); ++size) {
    if (auto cut = BtfView::copyOf(bytes.substr(0, size))) ADD_FAILURE() << "a cut at byte " << size << " was read";
  }
}

/// The running kernel's BTF, read by kq and by libbpf: the same types, names and sizes.
void expectSameAsLibbpf(const BtfView& view, const ::btf* libbpf, const std::string& what) {
  ASSERT_EQ(view.typeCount(), btf__type_cnt(libbpf)) << what;
  for (uint32_t id = view.firstId(); id < view.typeCount(); ++id) {
    const ::btf_type* mine = view.type(id);
    const ::btf_type* theirs = btf__type_by_id(libbpf, id);
    ASSERT_NE(mine, nullptr) << what << " type " << id;
    size_t size = BtfView::recordSize(mine);
    ASSERT_GT(size, 0u) << what << " type " << id << " of kind " << btf_kind(mine);
    ASSERT_EQ(std::memcmp(mine, theirs, size), 0) << what << " type " << id;
    ASSERT_STREQ(view.name(mine->name_off), btf__name_by_offset(libbpf, theirs->name_off)) << what << " type " << id;
    ASSERT_EQ(view.resolveSize(id), btf__resolve_size(libbpf, id)) << what << " type " << id;
    ASSERT_EQ(view.resolveType(id), btf__resolve_type(libbpf, id)) << what << " type " << id;
  }
}

TEST(RunningKernelBtf, ReadsAsLibbpfDoes) {
  const std::string dir = "/sys/kernel/btf";
  if (access((dir + "/vmlinux").c_str(), R_OK) != 0) GTEST_SKIP() << "this kernel has no readable " << dir << "/vmlinux";
  auto view = BtfView::readFile(dir + "/vmlinux");
  ASSERT_TRUE(view) << view.error().message;
  ::btf* libbpf = btf__parse_raw((dir + "/vmlinux").c_str());
  ASSERT_NE(libbpf, nullptr);
  expectSameAsLibbpf(**view, libbpf, "vmlinux");
  EXPECT_EQ((*view)->findByNameKind("sk_buff", BTF_KIND_STRUCT), btf__find_by_name_kind(libbpf, "sk_buff", BTF_KIND_STRUCT));
  int modules = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename() == "vmlinux" || modules == 5) continue;
    ::btf* split = btf__parse_split(entry.path().c_str(), libbpf);
    if (!split) continue;
    auto module = BtfView::readFile(entry.path(), view->get());
    ASSERT_TRUE(module) << module.error().message;
    expectSameAsLibbpf(**module, split, entry.path().filename().string());
    btf__free(split);
    ++modules;
  }
  btf__free(libbpf);
}

}  // namespace
}  // namespace kq::host
