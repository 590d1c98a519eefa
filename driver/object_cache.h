// Compiled objects kept on disk, so that a query run again starts without compiling: a
// one-liner typed again, a script run every morning, `trace packet` (half a second of LLVM).
// An object is found by everything that decides its code: kq's own binary, the running
// kernel (its release, build and BTF), the query's text and the options that reach the
// compiler. The whole key is kept in the file and compared, so two keys of one hash never
// share an object; a file that is not the user's own, or not whole, is passed over. A query
// that reads C (`use "app.h"`, `use c`, `macros(...)`) or another machine's BTF (--btf) is
// compiled every time: its inputs are more than its text.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "compiler/lower/lower.h"
#include "plan/portable_plan.h"

namespace kq::driver {

/// What decides the object of `text` (named `source_name`) compiled with `options` and
/// `attach` (--attach), or nullopt when it is not to be cached.
std::optional<std::string> objectCacheKey(const std::string& source_name, const std::string& text,
                                          const lower::LowerOptions& options, const std::string& attach);

/// The object kept for `key` in `directory`, if there is one whole and the user's own.
std::optional<lower::CompiledProgram> cachedObject(const std::filesystem::path& directory,
                                                   const std::string& key);

/// Keeps `compiled` for `key` in `directory` (written whole, then renamed into place); a
/// cache that cannot be written is no error.
void keepObject(const std::filesystem::path& directory, const std::string& key,
                const lower::CompiledProgram& compiled, std::vector<plan::QueryLimits> limits,
                std::vector<plan::QuerySource> query_sources);

/// $XDG_CACHE_HOME/kq/objects (or ~/.cache/kq/objects); empty when neither is set or
/// KQ_NO_OBJECT_CACHE is.
std::filesystem::path objectCacheDirectory();

}  // namespace kq::driver
