// Where kq keeps what it can find again: compiled objects, C headers' answers, what the
// running kernel offers.
#pragma once

#include <filesystem>
#include <string>

namespace kq::host {

/// $XDG_CACHE_HOME/kq, or ~/.cache/kq; empty when neither is set.
std::filesystem::path cacheDirectory();

/// Whether `path` is a regular file of this user's own that no one else may write: the
/// only kind of cache file kq reads (another user's could lie to it).
bool ownCacheFile(const std::filesystem::path& path);

/// Writes `text` to `path` whole (a file beside it, renamed into place), making its
/// directory; false when it cannot (a cache that cannot be written is no error).
bool writeCacheFile(const std::filesystem::path& path, const std::string& text);

/// This boot's id (/proc/sys/kernel/random/boot_id): what the kernel offers holds for it.
std::string bootId();

}  // namespace kq::host
