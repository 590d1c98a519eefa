#include "runtime/fd_output.h"

#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>


namespace kq::runtime {
namespace {

/// How long, once a stop is requested, the output still waits for a slow reader: long enough
/// for the final tables to reach a reader that is there, short enough to stop promptly.
constexpr int64_t kStopGraceNs = 500'000'000;

int64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

FdOutputBuffer::FdOutputBuffer(int fd) : fd_(fd), buffer_(64 * 1024) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  struct stat st;
  // A pipe, socket or terminal can make a write wait for its reader; a file (or a device
  // like /dev/null) cannot: its writes go straight out, whole.
  bool known = fstat(fd, &st) == 0;
  may_block_ = !known || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || isatty(fd);
}

bool FdOutputBuffer::stopping() const {
  if (stop_fd_ < 0) return false;
  pollfd p{stop_fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

bool FdOutputBuffer::waitForRoom() {
  pollfd p[2] = {{fd_, POLLOUT, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    int n = poll(p, stop_fd_ >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failed_errno_ = errno;
      failure_ = std::strerror(errno);
      return false;
    }
    if (p[0].revents) return true;  // writable, or an error the write will say
    return waitWritable();           // a stop was requested while the reader is slow
  }
}

FdOutputBuffer::~FdOutputBuffer() { sync(); }

FdOutputBuffer::int_type FdOutputBuffer::overflow(int_type c) {
  if (sync() != 0) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

int FdOutputBuffer::sync() {
  size_t size = static_cast<size_t>(pptr() - pbase());
  bool ok = failure_.empty() && writeAll(pbase(), size);
  setp(buffer_.data(), buffer_.data() + buffer_.size());  // what could not be written is dropped
  return ok ? 0 : -1;
}

/// Once a stop is requested, waits at most until the grace period ends for room to write.
bool FdOutputBuffer::waitWritable() {
  if (!give_up_at_ns_) give_up_at_ns_ = monotonicNs() + kStopGraceNs;
  for (;;) {
    int64_t left = give_up_at_ns_ - monotonicNs();
    pollfd p{fd_, POLLOUT, 0};
    int n = left > 0 ? poll(&p, 1, static_cast<int>(left / 1'000'000 + 1)) : 0;
    if (n > 0) return true;
    if (n < 0 && errno == EINTR) continue;
    failure_ = n == 0 ? "nobody reads it" : std::strerror(errno);
    return false;
  }
}

bool FdOutputBuffer::writeAll(const char* data, size_t size) {
  while (size > 0) {
    bool stop = may_block_ && stopping();
    if (!stop) give_up_at_ns_ = 0;  // a new session of the REPL: a new grace period
    if (stop && !waitWritable()) return false;
    // Signals do not interrupt writes (the engine reads them from a signalfd): a write that
    // could wait for a reader waits in poll, beside the stop request, and then writes at
    // most PIPE_BUF bytes, which a pipe that polled writable takes without blocking.
    if (may_block_ && !stop && !waitForRoom()) return false;
    size_t chunk = may_block_ ? std::min<size_t>(size, PIPE_BUF) : size;
    ssize_t n = write(fd_, data, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_errno_ = errno;
      failure_ = std::strerror(errno);
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void setOutputStopFd(std::ostream& out, int stop_fd) {
  if (auto* buffer = dynamic_cast<FdOutputBuffer*>(out.rdbuf())) buffer->setStopFd(stop_fd);
}

std::string outputFailure(const std::ostream& out) {
  if (auto* buffer = dynamic_cast<FdOutputBuffer*>(out.rdbuf())) {
    if (std::string why = buffer->failure(); !why.empty()) return why;
  }
  return out.bad() ? "the stream failed" : "";
}

bool readerGone(const std::ostream& out) {
  auto* buffer = dynamic_cast<FdOutputBuffer*>(out.rdbuf());
  return buffer && buffer->readerGone();
}

}  // namespace kq::runtime
