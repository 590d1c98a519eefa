#include "compiler/c/c_source.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "compiler/c/c_plugin.h"

namespace kq::c {

Result<const CompiledC*> compileCSource(const CInput& input) {
  static std::map<std::string, std::unique_ptr<CompiledC>> compiled;
  static const CompiledC not_found;
  if (namesNoRegularFile(input)) return &not_found;
  namespace fs = std::filesystem;
  fs::path path = fs::path(input.directory.empty() ? "." : input.directory) / input.file;
  if (fs::path(input.file).is_absolute()) path = input.file;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  if (in) bytes << in.rdbuf();
  std::string key = fs::absolute(path).string() + "\n" + std::to_string(std::hash<std::string>{}(bytes.str()));
  if (in) {
    if (auto it = compiled.find(key); it != compiled.end()) return it->second.get();
  }
  Result<CFrontend*> frontend = loadFrontend();
  if (!frontend) return frontend.error();
  auto out = std::make_unique<CompiledC>();
  out->result = (*frontend)->compileC(input);
  out->bitcode = std::make_shared<const std::string>(std::move(out->result.bitcode));
  const CompiledC* kept = out.get();
  if (in && out->result.found && out->result.diagnostics.empty()) compiled[key] = std::move(out);
  else compiled["failed\n" + key] = std::move(out);  // kept alive for the caller, not reused
  return kept;
}

}  // namespace kq::c
