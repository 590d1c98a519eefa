// Binaries named as bpftrace lets one name them: libraries on the linker's search path,
// programs on PATH.
#include "host/binary_path.h"

#include <gtest/gtest.h>

namespace kq::host {
namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(BinaryPath, ALibraryByItsShortNames) {
  for (const char* name : {"libc", "c", "libc.so.6"}) {
    auto path = findBinary(name);
    ASSERT_TRUE(path) << name;
    EXPECT_TRUE(endsWith(*path, "/libc.so.6")) << name << ": " << *path;  // not the libc.so linker script
  }
}

TEST(BinaryPath, AProgramOnPath) {
  auto sh = findBinary("sh");
  ASSERT_TRUE(sh);
  EXPECT_TRUE(endsWith(*sh, "/sh")) << *sh;
}

TEST(BinaryPath, APathIsItself) {
  EXPECT_EQ(findBinary("./a.out"), "./a.out");
  EXPECT_EQ(findBinary("/nonexistent/app"), "/nonexistent/app");  // its error is the reader's
}

TEST(BinaryPath, NothingOfThatName) {
  EXPECT_FALSE(findBinary("libkq_nothing_of_this_name"));
  EXPECT_FALSE(findBinary(""));
}

}  // namespace
}  // namespace kq::host
