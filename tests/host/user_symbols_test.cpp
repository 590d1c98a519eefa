// User addresses to names through a /proc of the test's making: this process's own mappings,
// copied, then changed as the kernel changes them when a process exits or execs.
#include "host/user_symbols.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

extern "C" __attribute__((noinline, used)) int kq_user_symbols_marker(int x) { return x * 3 + 1; }

namespace kq::host {
namespace {

namespace fs = std::filesystem;

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

/// /proc/self's stat with fields 26-28 (start and end of code, start of stack) replaced.
std::string statWithCode(const std::string& stat, const std::string& code) {
  size_t paren = stat.rfind(')');
  std::istringstream fields(stat.substr(paren + 2));
  std::vector<std::string> f;
  for (std::string word; fields >> word;) f.push_back(word);
  f[23] = f[24] = f[25] = code;
  std::string out = stat.substr(0, paren + 2);
  for (const std::string& word : f) out += word + " ";
  return out + "\n";
}

class UserSymbolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kq-user-symbols-" + std::to_string(getpid()));
    fs::remove_all(root_);
    dir_ = root_ / "42";
    fs::create_directories(dir_ / "map_files");
    maps_ = readAll("/proc/self/maps");
    stat_ = readAll("/proc/self/stat");
    writeAll(dir_ / "maps", maps_);
    writeAll(dir_ / "stat", stat_);
    // Each file mapping's map_files entry leads to the file, as the kernel's do.
    std::istringstream lines(maps_);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string range, perms, offset, dev, inode, path;
      fields >> range >> perms >> offset >> dev >> inode >> path;
      if (!path.empty() && path[0] == '/' && !fs::exists(dir_ / "map_files" / range))
        fs::create_symlink(path, dir_ / "map_files" / range);
    }
  }
  void TearDown() override { fs::remove_all(root_); }

  uint64_t marker() const { return reinterpret_cast<uint64_t>(&kq_user_symbols_marker); }

  fs::path root_, dir_;
  std::string maps_, stat_;
};

TEST_F(UserSymbolsTest, AFunctionByName) {
  UserSymbols symbols(4, 4, root_.string());
  EXPECT_EQ(symbols.name(42, marker()), "kq_user_symbols_marker");
  EXPECT_EQ(symbols.name(42, marker() + 2), "kq_user_symbols_marker+0x2");
  EXPECT_EQ(symbols.name(43, marker()), fmt::format("0x{:x}", marker()));  // no such process
}

TEST_F(UserSymbolsTest, AnExitingProcessKeepsItsNames) {
  // The last events of a process arrive as it exits: its memory is let go, so /proc shows
  // no code (0s) and no mappings, and then nothing at all.
  UserSymbols symbols(4, 4, root_.string());
  ASSERT_EQ(symbols.name(42, marker()), "kq_user_symbols_marker");
  writeAll(dir_ / "stat", statWithCode(stat_, "0"));
  writeAll(dir_ / "maps", "");
  symbols.nextEvent();
  EXPECT_EQ(symbols.name(42, marker()), "kq_user_symbols_marker");
  fs::remove(dir_ / "stat");
  fs::remove(dir_ / "maps");
  symbols.nextEvent();
  EXPECT_EQ(symbols.name(42, marker()), "kq_user_symbols_marker");
}

TEST_F(UserSymbolsTest, AnExecReadsTheMappingsAgain) {
  UserSymbols symbols(4, 4, root_.string());
  ASSERT_EQ(symbols.name(42, marker()), "kq_user_symbols_marker");
  writeAll(dir_ / "stat", statWithCode(stat_, "4096"));  // the code is elsewhere now
  writeAll(dir_ / "maps", "");                           // and this file is not mapped
  symbols.nextEvent();
  EXPECT_EQ(symbols.name(42, marker()), fmt::format("0x{:x}", marker()));
}

}  // namespace
}  // namespace kq::host
