// A file descriptor closed when its owner goes.
#pragma once

#include <unistd.h>

#include <utility>

namespace kq::host {

struct OwnedFd {
  int fd = -1;
  explicit OwnedFd(int f) : fd(f) {}
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
  OwnedFd(OwnedFd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) close(fd);
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
};

}  // namespace kq::host
