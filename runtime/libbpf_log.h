// libbpf's own messages. kq explains failures in its own words, so libbpf is quiet unless
// kq runs with -v; while loading, its messages (the verifier's log among them) are captured
// for kq to read.
#pragma once

#include <string>

namespace kq::runtime {

/// Whether libbpf's messages reach stderr.
void setLibbpfVerbose(bool verbose);

/// Captures libbpf's messages caused by this thread while it lives (a capture made inside
/// another takes them until it goes).
class LibbpfCapture {
 public:
  LibbpfCapture();
  ~LibbpfCapture();
  LibbpfCapture(const LibbpfCapture&) = delete;
  LibbpfCapture& operator=(const LibbpfCapture&) = delete;
  const std::string& text() const;

 private:
  std::string text_;
  std::string* outer_;
};

/// Sends one message through kq's libbpf printer, as libbpf would (for tests).
void captureForTest(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kq::runtime
