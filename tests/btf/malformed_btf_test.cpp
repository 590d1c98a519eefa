// BTF that libbpf accepts but whose types are broken is refused with a message, never
// walked: ids past the last type, a FUNC whose type is no FUNC_PROTO, and byte flips of
// the fake kernel's BTF.
#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "compiler/btf/btf.h"
#include "host/btf_file.h"
#include "host/btf_validate.h"
#include "tests/support/fake_kernel.h"

namespace kq::btf {
namespace {

using host::BtfView;

/// What kq finds wrong with `raw` (which it frees).
std::string findMalformedType(::btf* raw) {
  auto view = BtfView::copyOf(raw);
  btf__free(raw);
  return view ? host::findMalformedType(view->get()) : view.error().message;
}

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

// `typedef t t;` or a pointer to itself: libbpf's btf_dump recursed until the stack ran out.
TEST(MalformedBtf, TypeThatContainsItselfIsRefused) {
  ::btf* raw = btf__new_empty();
  int ptr = btf__add_ptr(raw, 2);       // [1] a pointer to [2]
  btf__add_typedef(raw, "loop", ptr);  // [2] a typedef of [1]
  EXPECT_NE(findMalformedType(raw).find("contains itself"), std::string::npos);
  raw = btf__new_empty();
  int s = btf__add_struct(raw, "list", 8);  // a named struct may point at itself
  btf__add_field(raw, "next", s + 1, 0, 0);
  btf__add_ptr(raw, s);
  EXPECT_EQ(findMalformedType(raw), "");
}

std::vector<uint8_t> fakeBtfBytes() {
  std::string path = ::testing::TempDir() + "/fake_vmlinux.btf";
  kq::testing::writeFakeBtf(path);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Everything kq does with a whole BTF file: indexes, functions' prototypes, every
/// struct's declaration and size.
void walkEverything(const Btf& btf) {
  for (std::string_view name : btf.functionNames()) {
    if (name.rfind("stub_", 0) == 0) continue;  // thousands of one prototype: slow, not new
    if (auto f = btf.findFunction(name)) (void)f->prototype();
  }
  for (std::string_view name : btf.structNames()) {
    auto s = btf.findStruct(name);
    if (!s) continue;
    (void)s->declaration("x");
    (void)s->size();
  }
  (void)btf.findEnumerator("NOPE");
  (void)btf.findTracepointHandler("net_dev_xmit");
}

// Flips bits of bytes past the header, one copy at a time: each copy is refused or walks
// without crashing (a crash fails the test binary). kq reads the bytes itself, as it reads
// vmlinux: libbpf checks none of them.
TEST(MalformedBtf, ByteFlippedFakeKernelNeverCrashes) {
  std::vector<uint8_t> original = fakeBtfBytes();
  ASSERT_GT(original.size(), 24u);
  // Every byte of the first types (ints, pointers, structs), then a sample of the rest.
  constexpr size_t kDense = 24 + 1024;
  size_t stride = std::max<size_t>(1, original.size() / 400) | 1;  // odd: every field offset
  int accepted = 0, refused = 0;
  for (size_t at = 24; at < original.size(); at += at < kDense ? 1 : stride) {
    for (uint8_t mask : {0x01, 0xff}) {
      std::vector<uint8_t> bytes = original;
      bytes[at] ^= mask;
      auto view = BtfView::copyOf(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      if (!view || !host::findMalformedType(view->get()).empty()) {
        ++refused;
        continue;
      }
      ++accepted;
      walkEverything(*Btf::adopt(view.take(), "flipped"));
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace kq::btf
