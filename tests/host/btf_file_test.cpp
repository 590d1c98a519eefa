// readKernelBtf: raw BTF read through a mapping (or libbpf, for split BTF) is the same BTF.
#include "host/btf_file.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
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
    write(dir_ / "vmlinux", base);
    ::btf* module = btf__new_empty_split(base);
    btf__add_struct(module, "kq_module_type", 4);
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
};

TEST_F(BtfFile, ReadsRawBtfWithItsTypes) {
  ::btf* btf = readKernelBtf(dir_ / "vmlinux");
  ASSERT_NE(btf, nullptr);
  EXPECT_EQ(btf__type_cnt(btf), 3u);
  EXPECT_EQ(btf__find_by_name_kind(btf, "kq_made_up", BTF_KIND_STRUCT), struct_id_);
  EXPECT_EQ(btf__resolve_size(btf, struct_id_), 8);

  ::btf* module = readKernelBtf(dir_ / "module", btf);
  ASSERT_NE(module, nullptr);
  EXPECT_GT(btf__find_by_name_kind(module, "kq_module_type", BTF_KIND_STRUCT), struct_id_);
  EXPECT_EQ(btf__find_by_name_kind(module, "kq_made_up", BTF_KIND_STRUCT), struct_id_);
  btf__free(module);
  btf__free(btf);
}

TEST_F(BtfFile, SaysWhyAFileIsNotBtf) {
  errno = 0;
  EXPECT_EQ(readKernelBtf(dir_ / "missing"), nullptr);
  EXPECT_EQ(errno, ENOENT);
  {
    FILE* f = std::fopen((dir_ / "text").c_str(), "wb");
    std::fputs("not BTF at all, just some words in a file\n", f);
    std::fclose(f);
  }
  errno = 0;
  EXPECT_EQ(readKernelBtf(dir_ / "text"), nullptr);
  EXPECT_NE(errno, 0);
}

}  // namespace
}  // namespace kq::host
