// Text made when an event prints: `join`'s strings, `buf`'s bytes, `strftime`'s time and
// `cat`'s file, as bpftrace shows them.
#include "runtime/printed.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kq::runtime {
namespace {

/// A StringList field holding `strings` (cut to their slots) and the count `count`.
std::vector<uint8_t> stringList(const std::vector<std::string>& strings, uint64_t count,
                                uint32_t bytes = plan::kJoinArgBytes) {
  std::vector<uint8_t> field(8 + plan::kJoinArgs * bytes, 0xaa);  // a ring buffer's record is not zeroed
  std::memcpy(field.data(), &count, 8);
  for (size_t i = 0; i < strings.size() && i < plan::kJoinArgs; ++i) {
    // As the kernel reads it: with its NUL where it fits, else its slot's bytes and no NUL.
    std::string s = strings[i].substr(0, bytes);
    std::memcpy(field.data() + 8 + i * bytes, s.c_str(), std::min<size_t>(s.size() + 1, bytes));
  }
  return field;
}

TEST(Printed, JoinSeparatesTheStringsRead) {
  auto field = stringList({"/bin/echo", "a", "bb", "ccc"}, 4);
  EXPECT_EQ(stringListText(field.data(), plan::kJoinBytes, " "), "/bin/echo a bb ccc");
  EXPECT_EQ(stringListText(field.data(), plan::kJoinBytes, ","), "/bin/echo,a,bb,ccc");
  EXPECT_EQ(stringListText(stringList({}, 0).data(), plan::kJoinBytes, " "), "");
  EXPECT_EQ(stringListText(stringList({"", "x"}, 2).data(), plan::kJoinBytes, ","), ",x");
}

TEST(Printed, JoinMarksWhatItCut) {
  std::string long_arg(100, 'x');
  auto field = stringList({"echo", long_arg}, 2);
  EXPECT_EQ(stringListText(field.data(), plan::kJoinBytes, " "), "echo " + std::string(plan::kJoinArgBytes, 'x') + "…");
  // A string that fills its slot with its NUL is whole.
  auto exact = stringList({"echo", std::string(plan::kJoinArgBytes - 1, 'x')}, 2);
  EXPECT_EQ(stringListText(exact.data(), plan::kJoinBytes, " "), "echo " + std::string(plan::kJoinArgBytes - 1, 'x'));
  std::vector<std::string> many;
  for (uint32_t i = 0; i < plan::kJoinArgs; ++i) many.push_back(std::to_string(i));
  std::string all = "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15";
  EXPECT_EQ(stringListText(stringList(many, plan::kJoinArgs).data(), plan::kJoinBytes, " "), all);
  EXPECT_EQ(stringListText(stringList(many, plan::kJoinArgs + 1).data(), plan::kJoinBytes, " "), all + " …");
}

TEST(Printed, JoinKeepsTheBytesItWasGiven) {
  // join(argv, " ", 256): a field of 16 strings of 256 bytes.
  std::string long_arg(200, 'x');
  auto field = stringList({"echo", long_arg}, 2, 256);
  EXPECT_EQ(stringListText(field.data(), static_cast<uint32_t>(field.size()), " "), "echo " + long_arg);
  auto cut = stringList({"echo", std::string(300, 'y')}, 2, 256);
  EXPECT_EQ(stringListText(cut.data(), static_cast<uint32_t>(cut.size()), " "), "echo " + std::string(256, 'y') + "…");
}

TEST(Printed, BufShowsPrintableAsciiAndEscapesTheRest) {
  const uint8_t bytes[] = {'a', '\\', ' ', '~', 0, 0x7f, 0xff, '\n'};
  EXPECT_EQ(bufferText(bytes, sizeof bytes), "a\\ ~\\x00\\x7f\\xff\\x0a");
  EXPECT_EQ(bufferText(bytes, 1), "a");
}

/// Local time is UTC while it lives.
class UtcZone {
 public:
  UtcZone() {
    if (const char* tz = std::getenv("TZ")) saved_ = tz;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  ~UtcZone() {
    if (saved_) {
      setenv("TZ", saved_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> saved_;
};

TEST(Printed, StrftimeFormatsLocalTimeWithMicroseconds) {
  UtcZone utc;
  // 2021-01-02 03:04:05.123456789 UTC
  int64_t ns = 1609556645'123456789;
  EXPECT_EQ(wallTimeText("%Y-%m-%d %H:%M:%S.%f", ns), "2021-01-02 03:04:05.123456");
  EXPECT_EQ(wallTimeText("%f|%%f|%%", ns), "123456|%f|%");
  EXPECT_EQ(wallTimeText("", ns), "");
  EXPECT_EQ(wallTimeText(std::string(300, 'x'), ns), std::string(300, 'x'));
}

TEST(Printed, CatShowsAFileWithoutItsLastNewline) {
  std::string path = ::testing::TempDir() + "kq_cat_test";
  {
    std::ofstream out(path);
    out << "line one\n\tline two\x1b\n";
  }
  EXPECT_EQ(fileText(path), "line one\n\tline two\\x1b");
  {
    std::ofstream out(path);
    out << std::string(plan::kCatBytes + 5, 'y');
  }
  EXPECT_EQ(fileText(path), std::string(plan::kCatBytes, 'y') + "…");
  unlink(path.c_str());
  EXPECT_EQ(fileText(path), "<cannot read " + path + ": No such file or directory>");
  EXPECT_EQ(fileText("/"), "<cannot read /: Is a directory>");
}

}  // namespace
}  // namespace kq::runtime
