#include "compiler/c/header_types.h"

#include <bpf/btf.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "compiler/c/c_plugin.h"
#include "host/cache_directory.h"

namespace kq::c {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTypeVariable = "__kq_type_";

std::optional<std::string> readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// The types `__kq_type_N` point to, by their C names.
HeaderTypes definedTypes(const btf::Btf& btf) {
  HeaderTypes out;
  const btf::BtfFile& file = btf.vmlinux();
  uint32_t count = file.btf->typeCount();
  for (uint32_t id = 1; id < count; ++id) {
    const btf_type* t = file.btf->type(id);
    if (!btf_is_var(t)) continue;
    std::string_view name = file.btf->name(t->name_off);
    if (name.substr(0, kTypeVariable.size()) != kTypeVariable) continue;
    const btf_type* ptr = file.btf->type(t->type);
    if (!ptr || !btf_is_ptr(ptr)) continue;
    btf::BtfType type{&file, ptr->type};
    const btf_type* target = type.get();
    std::string_view tname = type.name();
    std::string c_name = btf_is_struct(target) ? "struct " : btf_is_union(target) ? "union "
                         : btf_is_any_enum(target) ? "enum " : "";
    out.defined.emplace(c_name + std::string(tname), type);
  }
  return out;
}

}  // namespace

Result<HeaderTypesAnswer> headerTypes(const CInput& input) {
  if (namesNoRegularFile(input)) return HeaderTypesAnswer{};
  // Every BTF read, for the process: types point into them.
  static std::map<std::string, std::pair<std::unique_ptr<btf::Btf>, HeaderTypes>> loaded;

  // The header next to the script is named by its bytes; one found in the system's include
  // paths is compiled to a file of the process.
  fs::path local = fs::path(input.directory.empty() ? "." : input.directory) / input.file;
  if (fs::path(input.file).is_absolute()) local = input.file;
  std::optional<std::string> bytes = readBytes(local);
  std::string key;
  if (bytes) {
    key = fmt::format("{:016x}", std::hash<std::string>{}(fmt::format(
                                     "{}\n{}\n{}", kInterfaceVersion, fs::absolute(local).string(), *bytes)));
  } else {
    key = fmt::format("system-{:016x}-{}", std::hash<std::string>{}(input.file), getpid());
  }
  if (auto it = loaded.find(key); it != loaded.end()) {
    return HeaderTypesAnswer{true, {}, &it->second.second};
  }
  fs::path dir = host::cacheDirectory();
  std::error_code ec;
  if (dir.empty() || (fs::create_directories(dir, ec), ec)) dir = fs::temp_directory_path();
  fs::path object = dir / ("types-" + key + ".o");

  HeaderTypesAnswer answer;
  if (!bytes || !fs::exists(object)) {
    Result<CFrontend*> frontend = loadFrontend();
    if (!frontend) return frontend.error();
    fs::path partial = object;
    partial += fmt::format(".{}.tmp", getpid());
    HeaderTypesResult made = (*frontend)->headerTypes(input, partial.string());
    answer.found = made.found;
    answer.diagnostics = std::move(made.diagnostics);
    if (!made.found || !answer.diagnostics.empty()) {
      fs::remove(partial, ec);
      return answer;
    }
    fs::rename(partial, object, ec);
    if (ec) return Error{fmt::format("cannot write {}: {}", object.string(), ec.message())};
  }
  answer.found = true;
  Result<std::unique_ptr<btf::Btf>> btf = btf::Btf::loadFile(object.string());
  if (!btf) return btf.error();
  (*btf)->markUserSpace();
  HeaderTypes types = definedTypes(**btf);
  auto& slot = loaded[key] = {btf.take(), std::move(types)};
  if (!bytes) fs::remove(object, ec);  // nothing names it again
  answer.types = &slot.second;
  return answer;
}

}  // namespace kq::c
