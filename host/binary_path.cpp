#include "host/binary_path.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

namespace kq::host {
namespace {

bool isFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// A regular ELF file (libc.so beside libc.so.6 is a linker script).
bool isElf(const std::string& path) {
  if (!isFile(path)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

/// The lines of an ld.so.conf file: directories, and `include GLOB`s read in turn.
void readConf(const std::string& path, std::vector<std::string>& out, int depth) {
  if (depth > 8) return;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) continue;
    size_t end = line.find_last_not_of(" \t\r");
    line = line.substr(begin, end - begin + 1);
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern = line.substr(line.find_first_not_of(" \t", 7));
      if (pattern.front() != '/') pattern = path.substr(0, path.rfind('/') + 1) + pattern;
      glob_t found{};
      if (glob(pattern.c_str(), 0, nullptr, &found) == 0) {
        for (size_t i = 0; i < found.gl_pathc; ++i) readConf(found.gl_pathv[i], out, depth + 1);
      }
      globfree(&found);
    } else if (line.front() == '/') {
      out.push_back(line);
    }
  }
}

/// `libc.so.6` before `libc.so.6.1`: the shortest name, then the first in order.
bool better(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

/// In `dir`: `name` itself, else `name.so`, else the shortest `name.so.*`.
std::optional<std::string> libraryIn(const std::string& dir, const std::string& name) {
  for (const std::string& exact : {name, name + ".so"}) {
    if (isElf(dir + "/" + exact)) return dir + "/" + exact;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return std::nullopt;
  std::optional<std::string> best;
  std::string prefix = name + ".so.";
  while (dirent* e = readdir(d)) {
    std::string file = e->d_name;
    if (file.rfind(prefix, 0) != 0 || !isElf(dir + "/" + file)) continue;
    if (!best || better(file, *best)) best = file;
  }
  closedir(d);
  if (!best) return std::nullopt;
  return dir + "/" + *best;
}

}  // namespace

std::vector<std::string> librarySearchPath() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) {
    std::string path = env;
    for (size_t start = 0; start <= path.size();) {
      size_t colon = path.find(':', start);
      if (colon == std::string::npos) colon = path.size();
      if (colon > start) dirs.push_back(path.substr(start, colon - start));
      start = colon + 1;
    }
  }
  readConf("/etc/ld.so.conf", dirs, 0);
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
    dirs.push_back(d);
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& d : dirs) {
    if (seen.insert(d).second) out.push_back(d);
  }
  return out;
}

std::optional<std::string> findBinary(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return name;
  // A library: `libc`, `libc.so.6`, or bpftrace's `c` for libc.
  std::vector<std::string> names = {name};
  if (name.rfind("lib", 0) != 0) names.push_back("lib" + name);
  for (const std::string& n : names) {
    for (const std::string& dir : librarySearchPath()) {
      if (auto found = libraryIn(dir, n)) return found;
    }
  }
  // A program on PATH (an ELF one: a shim script on PATH is passed over).
  const char* env = std::getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= path.size();) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    std::string candidate = path.substr(start, colon - start) + "/" + name;
    if (colon > start && isElf(candidate) && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

}  // namespace kq::host
