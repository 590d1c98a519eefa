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

}  // namespace kq::runtime
