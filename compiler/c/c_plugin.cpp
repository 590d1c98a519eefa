#include "compiler/c/c_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "host/cache_directory.h"

namespace kq::c {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginName = "libkq-c.so";

std::vector<std::string> pluginCandidates() {
  if (const char* forced = std::getenv("KQ_C_PLUGIN"); forced && *forced) return {forced};
  std::vector<std::string> out;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((self.parent_path() / kPluginName).string());  // the build tree
    out.push_back((self.parent_path() / KQ_PLUGIN_FROM_BIN / kPluginName).lexically_normal().string());
  }
  out.push_back(std::string(KQ_PLUGIN_DIR) + "/" + kPluginName);
  return out;
}

/// The bytes of a header and of the files it includes, hashed; nullopt when one cannot be
/// read.
std::optional<size_t> contentHash(const std::string& path,
                                  const std::vector<std::string>& included) {
  std::ostringstream bytes;
  for (const std::string* file = &path; file; ) {
    std::ifstream in(*file, std::ios::binary);
    if (!in) return std::nullopt;
    bytes << *file << '\0' << in.rdbuf() << '\0';
    size_t next = file == &path ? 0 : static_cast<size_t>(file - included.data()) + 1;
    file = next < included.size() ? &included[next] : nullptr;
  }
  return std::hash<std::string>{}(bytes.str());
}

}  // namespace

Result<CFrontend*> loadFrontend() {
  // One plugin per path (tests point KQ_C_PLUGIN elsewhere); loaded once, never unloaded.
  static std::map<std::string, CFrontend*> loaded;
  std::string tried;
  for (const std::string& path : pluginCandidates()) {
    if (auto it = loaded.find(path); it != loaded.end()) return it->second;
    if (!fs::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return Error{std::string("cannot load ") + dlerror()};
    auto entry = reinterpret_cast<CFrontend* (*)(uint32_t)>(dlsym(handle, "kq_c_frontend"));
    CFrontend* frontend = entry ? entry(kInterfaceVersion) : nullptr;
    if (!frontend) {
      return Error{path + " is not the C plugin of this kq (rebuild or reinstall kq)"};
    }
    loaded[path] = frontend;
    return frontend;
  }
  return Error{"kq's C plugin is not installed (looked for " + tried + ")"};
}

namespace {

struct MacroEntry {
  MacroResult result;
  std::optional<size_t> hash;  // of the header's bytes when Clang read it
};

/// Where a `macros` answer is kept on disk: by what was asked (the answer names the header
/// Clang found, and its bytes' hash, checked on reading); "" without a cache directory.
fs::path macroCacheFile(const CInput& input, const std::string& prefix) {
  fs::path dir = host::cacheDirectory();
  if (dir.empty()) return {};
  std::string asked = std::to_string(kInterfaceVersion) + "\n" + input.file + "\n" +
                      fs::absolute(input.directory.empty() ? "." : input.directory).string() +
                      "\n" + prefix;
  char name[40];
  snprintf(name, sizeof name, "macros-%016zx.txt", std::hash<std::string>{}(asked));
  return dir / name;
}

/// A kept answer whose header (and the files it includes) still have the bytes they had:
/// the header's path, the hash, how many had the prefix, the included files, one a line,
/// then `NAME VALUE`s.
std::optional<MacroEntry> readMacroCache(const fs::path& file) {
  std::ifstream in(file);
  MacroEntry entry;
  size_t hash = 0, files = 0;
  if (!in || !std::getline(in, entry.result.path) ||
      !(in >> hash >> entry.result.with_prefix >> files) || files > 100000) {
    return std::nullopt;
  }
  in.ignore(1);
  for (std::string line; files-- > 0 && std::getline(in, line);) entry.result.included.push_back(line);
  if (contentHash(entry.result.path, entry.result.included) != hash) return std::nullopt;
  entry.hash = hash;
  entry.result.found = true;
  for (Macro m; in >> m.name >> m.value;) entry.result.macros.push_back(m);
  return entry;
}

void writeMacroCache(const fs::path& file, const MacroEntry& entry) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  fs::path partial = file;
  partial += ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(partial, std::ios::trunc);
    out << entry.result.path << "\n" << *entry.hash << " " << entry.result.with_prefix << " "
        << entry.result.included.size() << "\n";
    for (const std::string& f : entry.result.included) out << f << "\n";
    for (const Macro& m : entry.result.macros) out << m.name << " " << m.value << "\n";
    if (!out) return;
  }
  fs::rename(partial, file, ec);
}

}  // namespace

Result<const MacroResult*> cachedMacros(const CInput& input, const std::string& prefix) {
  static std::map<std::tuple<std::string, std::string, std::string>, MacroEntry> cache;
  static const MacroResult not_found;
  if (namesNoRegularFile(input)) return &not_found;
  auto key = std::tuple{input.file, input.directory, prefix};
  if (auto it = cache.find(key); it != cache.end() && it->second.result.found &&
                                 contentHash(it->second.result.path, it->second.result.included) == it->second.hash) {
    return &it->second.result;
  }
  fs::path file = macroCacheFile(input, prefix);
  if (!file.empty()) {
    if (std::optional<MacroEntry> kept = readMacroCache(file)) {
      return &(cache[key] = std::move(*kept)).result;
    }
  }
  Result<CFrontend*> frontend = loadFrontend();
  if (!frontend) return frontend.error();
  MacroEntry entry{(*frontend)->macros(input, prefix), std::nullopt};
  if (entry.result.found) entry.hash = contentHash(entry.result.path, entry.result.included);
  bool keep = entry.result.found && entry.hash && entry.result.diagnostics.empty();
  if (keep && !file.empty()) writeMacroCache(file, entry);
  return &(cache[key] = std::move(entry)).result;
}

bool namesNoRegularFile(const CInput& input) {
  fs::path local = fs::path(input.directory.empty() ? "." : input.directory) / input.file;
  if (fs::path(input.file).is_absolute()) local = input.file;
  std::error_code ec;
  return fs::exists(local, ec) && !fs::is_regular_file(local, ec);
}

std::string sourceDirectory(const std::string& source_name) {
  std::error_code ec;
  fs::path dir = fs::path(source_name).parent_path();
  if (dir.empty() || !fs::is_directory(dir, ec)) return "";
  return dir.string();
}

}  // namespace kq::c
