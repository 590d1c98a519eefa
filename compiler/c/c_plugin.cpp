#include "compiler/c/c_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

namespace kq::c {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginName = "libkq-c.so";

std::vector<std::string> pluginCandidates() {
  if (const char* forced = std::getenv("KQ_C_PLUGIN"); forced && *forced) return {forced};
  std::vector<std::string> out;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((self.parent_path() / kPluginName).string());
  out.push_back(std::string(KQ_PLUGIN_DIR) + "/" + kPluginName);
  return out;
}

/// A file's bytes, hashed; nullopt when it cannot be read.
std::optional<size_t> contentHash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
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

const MacroResult& cachedMacros(CFrontend& frontend, const CInput& input,
                                const std::string& prefix) {
  struct Entry {
    MacroResult result;
    std::optional<size_t> hash;  // of the header's bytes when Clang read it
  };
  static std::map<std::tuple<std::string, std::string, std::string>, Entry> cache;
  auto key = std::tuple{input.file, input.directory, prefix};
  if (auto it = cache.find(key); it != cache.end() && it->second.result.found &&
                                 contentHash(it->second.result.path) == it->second.hash) {
    return it->second.result;
  }
  Entry entry{frontend.macros(input, prefix), std::nullopt};
  if (entry.result.found) entry.hash = contentHash(entry.result.path);
  Entry& kept = cache[key] = std::move(entry);
  return kept.result;
}

std::string sourceDirectory(const std::string& source_name) {
  std::error_code ec;
  fs::path dir = fs::path(source_name).parent_path();
  if (dir.empty() || !fs::is_directory(dir, ec)) return "";
  return dir.string();
}

}  // namespace kq::c
