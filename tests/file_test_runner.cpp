// The file-test driver. Each tests/<phase>/testdata/**/*.kq file is one test: kq runs on the
// file (arguments from an optional `# ARGS:` line, `check` by default; `info` and `list`
// get no file) and its combined
// stdout and stderr must equal the file's trailing `# CHECK:` lines.
//
// - Files named `fail_*` must make kq report errors; only they may.
// - `file_tests --autoupdate` (or KQ_AUTOUPDATE=1) rewrites the CHECK lines from kq's actual
//   output; review the diff before committing.
// - kq sees the fake kernel of tests/support/fake_kernel.h, except under tests/host/,
//   whose files check against the running kernel (and skip where it has no BTF). In
//   `# ARGS:`, `%fakebtf` names a raw BTF file of the fake kernel, for `--btf`.
// - A final test checks that every diagnostic kind is produced by some file test.
// - `CheckedCompiles`: every file `kq check` accepts (a positive test of `check`) also
//   compiles, through sema, lowering and LLVM (`--dump plan`), with no diagnostic: what
//   `kq check` accepts is what runs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "compiler/diag/diagnostic.h"
#include "tests/support/fake_kernel.h"
#include "tools/kq/cli.h"

namespace fs = std::filesystem;

namespace {

bool g_autoupdate = false;
std::string g_fake_btf_path;
constexpr std::string_view kCheck = "# CHECK:";
constexpr std::string_view kArgs = "# ARGS:";

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// A test file split into the script kq reads and the output it expects.
struct TestFile {
  std::string script;
  std::vector<std::string> expected;
  std::vector<std::string> args;
  bool check_lines_last = true;
};

TestFile loadTestFile(const fs::path& path, const std::string& display_path) {
  TestFile file;
  bool seen_check = false;
  for (const std::string& line : splitLines(readAll(path))) {
    if (startsWith(line, kCheck)) {
      std::string rest = line.substr(kCheck.size());
      file.expected.push_back(rest.empty() ? rest : rest.substr(1));
      seen_check = true;
      continue;
    }
    if (seen_check) file.check_lines_last = false;
    if (startsWith(line, kArgs)) {
      std::istringstream words(line.substr(kArgs.size()));
      // Words split at spaces; `%20` puts a space inside one (`info struct%20sk_buff`).
      for (std::string word; words >> word;) {
        for (size_t at; (at = word.find("%20")) != std::string::npos;) word.replace(at, 3, " ");
        file.args.push_back(word);
      }
    }
    file.script += line + "\n";
  }
  // Keep the script exactly as it reads in the file, minus the blank lines before CHECKs.
  while (file.script.size() >= 2 && file.script.substr(file.script.size() - 2) == "\n\n") {
    file.script.pop_back();
  }
  if (file.args.empty()) file.args = {"check"};
  for (std::string& arg : file.args) {
    if (arg == "%s") arg = display_path;
    if (arg == "%fakebtf") arg = g_fake_btf_path;
    // `%tests/...`: a file beside the tests (a recording for `replay`).
    if (startsWith(arg, "%tests/")) arg = std::string(KQ_TESTS_DIR) + arg.substr(6);
  }
  // `info` and `list` take names, not files; other commands read the test file.
  bool reads_file = file.args[0] != "info" && file.args[0] != "list";
  if (reads_file &&
      std::find(file.args.begin(), file.args.end(), display_path) == file.args.end()) {
    file.args.push_back(display_path);
  }
  return file;
}

/// kq's input and output for a test: the script as the only file, output to `out`, and the
/// fake kernel (or, for tests/host/ and `--btf`, a real one).
kq::driver::Io testIo(std::ostream& out, const std::string& display_path, const std::string& script,
                   bool real_kernel) {
  return kq::driver::Io{out, out,
                     [=](const std::string& path, std::string& error) -> std::optional<std::string> {
                       if (path == display_path) return script;
                       error = "No such file or directory";
                       return std::nullopt;
                     },
                     false,
                     [=](const std::string& btf_path) -> kq::Result<kq::driver::KernelEnvironment> {
                       if (real_kernel || !btf_path.empty()) {
                         return kq::driver::loadKernelEnvironment(btf_path);
                       }
                       return kq::driver::KernelEnvironment{kq::testing::fakeBtf(),
                                                         kq::testing::fakeKernelInfo()};
                     }};
}

class FileTest : public testing::Test {
 public:
  FileTest(fs::path path, std::string display_path)
      : path_(std::move(path)), display_path_(std::move(display_path)) {}

  void TestBody() override {
    bool real_kernel = startsWith(display_path_, "host/");
    if (real_kernel && !fs::exists("/sys/kernel/btf/vmlinux")) {
      GTEST_SKIP() << "this kernel has no BTF (/sys/kernel/btf/vmlinux)";
    }
    TestFile file = loadTestFile(path_, display_path_);
    ASSERT_TRUE(file.check_lines_last)
        << path_ << ": `# CHECK:` lines must all come after the script";

    std::ostringstream output;
    kq::driver::Io io = testIo(output, display_path_, file.script, real_kernel);
    int status = kq::cli::run(file.args, io);
    std::vector<std::string> actual = splitLines(output.str());

    bool expect_failure = startsWith(path_.filename().string(), "fail_");
    bool reported_error = output.str().find("error:") != std::string::npos;
    if (expect_failure) {
      EXPECT_NE(status, 0) << "a fail_ test must make kq fail";
      EXPECT_TRUE(reported_error) << "a fail_ test must report an error";
    } else {
      EXPECT_EQ(status, 0) << "only fail_ tests may fail; output:\n" << output.str();
      EXPECT_FALSE(reported_error) << "only fail_ tests may report errors";
    }

    if (actual == file.expected) return;
    if (g_autoupdate) {
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out << file.script << "\n";
      for (const std::string& line : actual) {
        out << kCheck << (line.empty() ? "" : " ") << line << "\n";
      }
      return;
    }
    std::ostringstream diff;
    size_t n = std::max(actual.size(), file.expected.size());
    for (size_t i = 0; i < n; ++i) {
      std::string want = i < file.expected.size() ? file.expected[i] : "<nothing>";
      std::string got = i < actual.size() ? actual[i] : "<nothing>";
      if (want != got) diff << "  line " << i + 1 << "\n    want: " << want << "\n    got:  " << got << "\n";
    }
    ADD_FAILURE() << path_ << ": output differs from its CHECK lines "
                  << "(run file_tests --autoupdate to accept):\n"
                  << diff.str();
  }

 private:
  fs::path path_;
  std::string display_path_;
};

/// A positive `check` test, compiled all the way (`--dump plan`): it must succeed silently.
class CheckedCompiles : public testing::Test {
 public:
  CheckedCompiles(fs::path path, std::string display_path)
      : path_(std::move(path)), display_path_(std::move(display_path)) {}

  void TestBody() override {
    TestFile file = loadTestFile(path_, display_path_);
    std::ostringstream output;
    kq::driver::Io io = testIo(output, display_path_, file.script, /*real_kernel=*/false);
    int status = kq::cli::run({"--dump", "plan", display_path_}, io);
    EXPECT_EQ(status, 0) << "`kq check` accepts it, so it must compile; output:\n" << output.str();
    EXPECT_EQ(output.str().find("error"), std::string::npos) << output.str();
  }

  /// Whether `path` is a test this applies to: a script that `kq check` is expected to
  /// accept (not `info`, `list` or `replay`, whose files are no scripts, nor a parse-only
  /// `--dump ast`).
  static bool appliesTo(const fs::path& path, const std::string& display_path) {
    if (startsWith(path.filename().string(), "fail_") || startsWith(display_path, "host/")) return false;
    TestFile file = loadTestFile(path, display_path);
    bool parse_only = std::find(file.args.begin(), file.args.end(), "ast") != file.args.end();
    return file.args[0] != "info" && file.args[0] != "list" && file.args[0] != "replay" && !parse_only;
  }

 private:
  fs::path path_;
  std::string display_path_;
};

std::vector<fs::path> testFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(KQ_TESTS_DIR)) {
    const fs::path& p = entry.path();
    if (entry.is_regular_file() && p.extension() == ".kq" &&
        p.string().find("/testdata/") != std::string::npos) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string testName(const std::string& relative) {
  std::string name;
  for (char c : relative) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

TEST(FileTestCoverage, EveryDiagnosticKindHasAFileTest) {
  std::set<std::string> seen;
  for (const fs::path& path : testFiles()) {
    for (const std::string& line : splitLines(readAll(path))) {
      if (!startsWith(line, kCheck)) continue;
      size_t open = line.rfind(" [");
      if (open != std::string::npos && line.back() == ']') {
        seen.insert(line.substr(open + 2, line.size() - open - 3));
      }
    }
  }
  for (kq::DiagKind kind : kq::allDiagKinds()) {
    std::string name(kq::diagKindName(kind));
    // Only a kernel loading a program produces this one; tests/lower checks the mapping of
    // an instruction back to kq source that it relies on.
    if (name == "VerifierRejected") continue;
    // Only a kq without its C plugin produces this one: tests/cli/cli_test.py runs it so.
    if (name == "CUnavailable") continue;
    // Only a kernel without the attach methods a probe needs produces this one:
    // tests/runtime/runtime_test.py runs it where fentry and kprobes are missing.
    if (name == "CannotAttach") continue;
    EXPECT_TRUE(seen.count(name)) << "no file test produces [" << name << "]";
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--autoupdate") g_autoupdate = true;
  }
  if (const char* env = std::getenv("KQ_AUTOUPDATE"); env && std::string_view(env) == "1") {
    g_autoupdate = true;
  }
  // C files and headers of tests are named relative to tests/, as the scripts are; the C
  // plugin is the one just built.
  fs::current_path(KQ_TESTS_DIR);
  setenv("KQ_C_PLUGIN", KQ_C_PLUGIN_PATH, /*overwrite=*/0);
  g_fake_btf_path = (fs::temp_directory_path() / ("kq-fake-btf-" + std::to_string(getpid()))).string();
  kq::testing::writeFakeBtf(g_fake_btf_path);
  for (const fs::path& path : testFiles()) {
    std::string relative = fs::relative(path, KQ_TESTS_DIR).string();
    testing::RegisterTest("FileTest", testName(relative).c_str(), nullptr, relative.c_str(),
                          __FILE__, __LINE__, [=]() -> testing::Test* {
                            return new FileTest(path, relative);
                          });
    if (CheckedCompiles::appliesTo(path, relative)) {
      testing::RegisterTest("CheckedCompiles", testName(relative).c_str(), nullptr,
                            relative.c_str(), __FILE__, __LINE__, [=]() -> testing::Test* {
                              return new CheckedCompiles(path, relative);
                            });
    }
  }
  int status = RUN_ALL_TESTS();
  fs::remove(g_fake_btf_path);
  return status;
}
