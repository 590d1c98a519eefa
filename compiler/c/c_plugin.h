// kq's side of its C plugin (c_frontend.h): found and loaded on the first use of C in a
// process, never before, and its answers kept per file content, so a session pays Clang's
// start-up once and a header read again costs a hash of its bytes.
#pragma once

#include <filesystem>
#include <string>

#include "compiler/c/c_frontend.h"
#include "compiler/diag/result.h"

namespace kq::c {

/// The plugin, loaded on first use from $KQ_C_PLUGIN, or libkq-c.so next to the running
/// binary (the build tree), or where installing put it from the binary (`../lib/kq`), or in
/// the configured install library directory; an Error saying where kq looked.
Result<CFrontend*> loadFrontend();

/// The plugin's `macros(input, prefix)`, answered again without Clang (or the plugin) while
/// the header it read has the same bytes: kept in the process and in the cache directory.
/// An Error when the plugin is needed and missing.
Result<const MacroResult*> cachedMacros(const CInput& input, const std::string& prefix);

/// Whether `input.file`, where it is looked for first (next to the script), is something
/// other than a regular file (a directory, /dev/zero): then kq reads nothing of it.
bool namesNoRegularFile(const CInput& input);

/// The directory a file named `source_name` (a script's path, or `<command line>`) lives
/// in, where its C files are looked for first: "" (the working directory) for no file.
std::string sourceDirectory(const std::string& source_name);

}  // namespace kq::c
