#include "driver/object_cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "compiler/c/c_plugin.h"
#include "kq_commit.h"
#include "kq_version.h"
#include "plan/portable_plan.h"
#include "host/cache_directory.h"

namespace kq::driver {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMagic = "kq object cache 1\n";

/// kq's own binary, as it is on disk now: a rebuilt kq compiles again.
std::string binaryIdentity() {
  struct stat st {};
  if (stat("/proc/self/exe", &st) != 0) return "";
  return fmt::format("kq {} {} {}:{} {} {}.{}", KQ_VERSION, KQ_COMMIT, st.st_dev, st.st_ino,
                     st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/// The running kernel: its release and build, its BTF, and the modules that have BTF
/// (a glob of functions matches what is loaded).
std::string kernelIdentity() {
  utsname u{};
  if (uname(&u) != 0) return "";
  struct stat st {};
  if (stat("/sys/kernel/btf/vmlinux", &st) != 0) return "";
  std::vector<std::string> modules;
  if (DIR* d = opendir("/sys/kernel/btf")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') modules.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(modules.begin(), modules.end());
  return fmt::format("{} {} {} btf {} modules {}", u.release, u.version, u.machine, st.st_size,
                     fmt::join(modules, ","));
}

/// Whether any test knob of the environment (KQ_TEST_...) is set: they change what is compiled.
bool testKnobs() {
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "KQ_TEST_", 8) == 0) return true;
  }
  return false;
}

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

fs::path fileFor(const fs::path& directory, const std::string& key) {
  return directory / fmt::format("{:016x}.kqo", fnv1a(key));
}

void putBlock(std::string& out, std::string_view bytes) {
  uint64_t n = bytes.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(bytes);
}

bool takeBlock(std::string_view& in, std::string_view& block) {
  uint64_t n = 0;
  if (in.size() < sizeof n) return false;
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (n > in.size()) return false;
  block = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

/// The cache stays under kMostBytes: the objects used longest ago go first (a hit
/// renews its file's time). Reading every file's size and time takes milliseconds once
/// thousands are kept, so one write in kPruneEvery (by its key) prunes: the cache may pass
/// its cap by a few objects in between.
constexpr uintmax_t kMostBytes = 256ull << 20;
constexpr size_t kPruneEvery = 16;

void prune(const fs::path& directory) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  uintmax_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(directory, ec)) {
    if (e.path().extension() != ".kqo" || !e.is_regular_file(ec)) continue;
    total += e.file_size(ec);
    files.emplace_back(e.last_write_time(ec), e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [when, path] : files) {
    if (total <= kMostBytes) break;
    uintmax_t size = fs::file_size(path, ec);
    if (fs::remove(path, ec)) total -= std::min(total, size);
  }
}

}  // namespace

std::optional<std::string> objectCacheKey(const std::string& source_name, const std::string& text,
                                          const lower::LowerOptions& options, const std::string& attach) {
  if (options.want_ir || options.want_asm || testKnobs()) return std::nullopt;
  // Inputs beyond the text: C headers and sources, and the names of network namespaces
  // (`netns_name`, `dev_netns_name`, and any comparison of `netns` or `dev_netns`, which
  // may be with a name). A uprobe's binary is named in the text by its identity
  // (driver/run.cpp, probedInputs).
  static const std::regex more_inputs(
      R"(\buse\s+(c\s+)?"|\bmacros\s*\(|netns_name\b|\b(dev_)?netns\s*(==|!=|~)|(==|!=)\s*(dev_)?netns\b)");
  if (std::regex_search(text, more_inputs)) return std::nullopt;
  std::string binary = binaryIdentity();
  std::string kernel = kernelIdentity();
  if (binary.empty() || kernel.empty()) return std::nullopt;
  return fmt::format(
      "{}\n{}\nattach {} pid {} follow {} ring {} strings {} keys {} dumps {} packet_tracepoints {} live {}\n"
      "source {}\n{}",
      binary, kernel, attach, options.pid, options.follow_children, options.ringbuf_bytes,
      options.string_bytes, options.key_string_bytes, options.dump_bytes, options.packet_tracepoints,
      options.live_sites, source_name, text);
}

std::optional<lower::CompiledProgram> cachedObject(const fs::path& directory, const std::string& key) {
  if (directory.empty()) return std::nullopt;
  fs::path file = fileFor(directory, key);
  if (!host::ownCacheFile(file)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string_view rest(bytes);
  if (rest.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  rest.remove_prefix(kMagic.size());
  std::string_view kept_key, plan_text, left_out, elf;
  if (!takeBlock(rest, kept_key) || kept_key != key || !takeBlock(rest, plan_text) ||
      !takeBlock(rest, left_out) || !takeBlock(rest, elf) || !rest.empty()) {
    return std::nullopt;
  }
  std::string error;
  std::optional<plan::PortablePlan> plan = plan::decodePlan(std::string(plan_text), &error);
  if (!plan || left_out.size() != plan->plan.programs.size()) return std::nullopt;
  std::error_code ec;
  fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // used now: kept longest
  lower::CompiledProgram compiled;
  compiled.plan = std::move(plan->plan);
  compiled.object.elf.assign(elf.begin(), elf.end());
  for (char c : left_out) compiled.left_out.push_back(c == '1');
  return compiled;
}

void keepObject(const fs::path& directory, const std::string& key, const lower::CompiledProgram& compiled,
                std::vector<plan::QueryLimits> limits, std::vector<plan::QuerySource> query_sources) {
  if (directory.empty()) return;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) return;
  plan::PortablePlan plan;
  plan.plan = compiled.plan;
  plan.limits = std::move(limits);
  plan.query_sources = std::move(query_sources);
  plan.kq_version = KQ_VERSION;
  std::string left_out;
  for (size_t i = 0; i < compiled.plan.programs.size(); ++i) {
    left_out += i < compiled.left_out.size() && compiled.left_out[i] ? '1' : '0';
  }
  std::string out(kMagic);
  putBlock(out, key);
  putBlock(out, plan::encodePlan(plan));
  putBlock(out, left_out);
  putBlock(out, std::string_view(compiled.object.elf.data(), compiled.object.elf.size()));
  fs::path file = fileFor(directory, key);
  fs::path partial = file;
  partial += fmt::format(".tmp{}", getpid());
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f) {
      fs::remove(partial, ec);
      return;
    }
  }
  fs::permissions(partial, fs::perms::owner_read | fs::perms::owner_write, ec);
  fs::rename(partial, file, ec);
  if (ec) fs::remove(partial, ec);
  if (std::hash<std::string>{}(key) % kPruneEvery == 0) prune(directory);
}

fs::path objectCacheDirectory() {
  if (const char* off = std::getenv("KQ_NO_OBJECT_CACHE"); off && *off) return {};
  fs::path kq = host::cacheDirectory();  // where the C plugin keeps its answers too
  return kq.empty() ? kq : kq / "objects";
}

}  // namespace kq::driver
