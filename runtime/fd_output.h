// kq's standard output: a stream buffer on a file descriptor that reports write errors
// instead of ignoring them, and that stops waiting for a reader once a stop is requested
// (its stop fd is readable), so a pipe nobody reads cannot keep kq from ending.
#pragma once

#include <cerrno>
#include <cstdint>
#include <streambuf>
#include <string>
#include <vector>

namespace kq::runtime {

class FdOutputBuffer : public std::streambuf {
 public:
  explicit FdOutputBuffer(int fd);
  ~FdOutputBuffer() override;

  /// Why output failed ("Broken pipe"), empty while it has not.
  const std::string& failure() const { return failure_; }
  /// Whether output failed because its reader went away (EPIPE: `kq ... | head`).
  bool readerGone() const { return failed_errno_ == EPIPE; }
  /// A file descriptor readable once a stop is requested (an engine Cancellation's), or -1.
  void setStopFd(int fd) { stop_fd_ = fd; }

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  bool writeAll(const char* data, size_t size);
  bool waitWritable();
  bool waitForRoom();
  bool stopping() const;

  int fd_;
  std::vector<char> buffer_;
  std::string failure_;
  int failed_errno_ = 0;
  int64_t give_up_at_ns_ = 0;  // once a stop is requested: when to stop waiting for a reader
  int stop_fd_ = -1;
  bool may_block_ = true;
};

/// Why writing to `out` failed (its FdOutputBuffer says how: "stdout's reader went away"),
/// or "" while it works.
std::string outputFailure(const std::ostream& out);

/// Whether `out` failed because its reader went away (a pipe closed by `head`): not an
/// error of kq's, which then ends quietly with status 0.
bool readerGone(const std::ostream& out);

/// Makes the FdOutputBuffer of `out`, if it has one, watch `stop_fd` (-1: nothing).
void setOutputStopFd(std::ostream& out, int stop_fd);

}  // namespace kq::runtime
