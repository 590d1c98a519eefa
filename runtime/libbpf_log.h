// libbpf's own messages. kq explains failures in its own words, so libbpf is quiet unless
// kq runs with -v; while loading, its messages (the verifier's log among them) are captured
// for kq to read.
#pragma once

#include <string>

namespace kq::runtime {

/// Whether libbpf's messages reach stderr.
void setLibbpfVerbose(bool verbose);

/// Captures libbpf's messages while it lives.
class LibbpfCapture {
 public:
  LibbpfCapture();
  ~LibbpfCapture();
  const std::string& text() const;
};

/// Sends one message through kq's libbpf printer, as libbpf would (for tests).
void captureForTest(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kq::runtime
