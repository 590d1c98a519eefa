#include "host/cache_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace kq::host {

namespace fs = std::filesystem;

fs::path cacheDirectory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "kq";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "kq";
  return {};
}

bool ownCacheFile(const fs::path& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool writeCacheFile(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return false;
  fs::path partial = path;
  partial += ".partial." + std::to_string(getpid());
  {
    std::ofstream out(partial, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      fs::remove(partial, ec);
      return false;
    }
  }
  fs::rename(partial, path, ec);
  if (ec) fs::remove(partial, ec);
  return !ec;
}

std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace kq::host
