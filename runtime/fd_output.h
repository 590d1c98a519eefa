// kq's standard output: a stream buffer on a file descriptor that reports write errors
// instead of ignoring them, and that stops waiting for a reader once a stop is requested,
// so a pipe nobody reads cannot keep kq from ending.
#pragma once

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

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  bool writeAll(const char* data, size_t size);
  bool waitWritable();

  int fd_;
  std::vector<char> buffer_;
  std::string failure_;
  int64_t give_up_at_ns_ = 0;  // once a stop is requested: when to stop waiting for a reader
};

/// Why the output of `out` failed, if it is an FdOutputBuffer's and it did; empty otherwise.
std::string outputFailure(std::ostream& out);

}  // namespace kq::runtime
