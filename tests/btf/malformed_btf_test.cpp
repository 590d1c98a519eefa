// BTF that libbpf accepts but whose types are broken is refused with a message, never
// walked: ids past the last type, a FUNC whose type is no FUNC_PROTO, and byte flips of
// the fake kernel's BTF.
#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "compiler/btf/btf.h"
#include "compiler/btf/validate.h"
#include "tests/support/fake_kernel.h"

namespace kq::btf {
namespace {

std::string testdata(const std::string& name) { return std::string(KQ_TESTS_DIR) + "/btf/testdata/" + name; }

TEST(MalformedBtf, FunctionWhoseTypeIsAnIntIsRefused) {
  auto loaded = Btf::loadFile(testdata("func_to_int.btf"));
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("not a function prototype"), std::string::npos)
      << loaded.error().message;
}

TEST(MalformedBtf, TypeIdPastTheLastTypeIsRefused) {
  auto loaded = Btf::loadFile(testdata("func_to_999.btf"));
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("refers to type 999"), std::string::npos)
      << loaded.error().message;
}

std::vector<uint8_t> fakeBtfBytes() {
  std::string path = ::testing::TempDir() + "/fake_vmlinux.btf";
  kq::testing::writeFakeBtf(path);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Everything kq does with a whole BTF file: indexes, every function's prototype, every
/// struct's declaration and size.
void walkEverything(const Btf& btf) {
  for (const Function& f : btf.matchFunctions("*")) (void)f.prototype();
  for (std::string_view name : btf.structNames()) {
    auto s = btf.findStruct(name);
    if (!s) continue;
    (void)s->declaration("x");
    (void)s->size();
  }
  (void)btf.findEnumerator("NOPE");
  (void)btf.findTracepointHandler("net_dev_xmit");
}

// Flips bits of every byte past the header, one file at a time: each copy is refused or
// walks without crashing (a crash fails the whole test binary).
TEST(MalformedBtf, ByteFlippedFakeKernelNeverCrashes) {
  std::vector<uint8_t> original = fakeBtfBytes();
  ASSERT_GT(original.size(), 24u);
  int accepted = 0, refused = 0;
  for (size_t at = 24; at < original.size(); ++at) {
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      std::vector<uint8_t> bytes = original;
      bytes[at] ^= mask;
      ::btf* raw = btf__new(bytes.data(), bytes.size());
      if (!raw) continue;
      if (!findMalformedType(raw).empty()) {
        btf__free(raw);
        ++refused;
        continue;
      }
      ++accepted;
      walkEverything(*Btf::adopt(raw, "flipped"));
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace kq::btf
