#include "serve/event_log.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kq::serve {

Result<std::unique_ptr<EventLog>> EventLog::open(const std::string& path, uint64_t max_bytes) {
  std::unique_ptr<EventLog> log(new EventLog());
  log->path_ = path;
  log->max_bytes_ = max_bytes;
  if (!log->reopen()) return Error{fmt::format("cannot write events to {}: {}", path, std::strerror(errno))};
  return log;
}

EventLog::~EventLog() {
  if (file_) std::fclose(file_);
}

bool EventLog::reopen() {
  if (file_) std::fclose(file_);
  file_ = std::fopen(path_.c_str(), "ae");
  if (!file_) return false;
  struct stat st {};
  bytes_ = ::fstat(fileno(file_), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return true;
}

void EventLog::write(const std::string& lines) {
  if (lines.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (out_) {
    *out_ << lines << std::flush;
    return;
  }
  if (!file_) return;
  if (bytes_ > 0 && bytes_ + lines.size() > max_bytes_) {
    std::fflush(file_);
    std::string old = path_ + ".1";
    if (std::rename(path_.c_str(), old.c_str()) == 0) ++rotations_;
    if (!reopen()) return;
  }
  std::fwrite(lines.data(), 1, lines.size(), file_);
  std::fflush(file_);
  bytes_ += lines.size();
}

}  // namespace kq::serve
