#include "runtime/libbpf_log.h"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace kq::runtime {
namespace {

bool g_verbose = false;

/// Appends a whole message, however long (a verifier log is one message of megabytes).
void appendFormatted(std::string& out, const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return;
  size_t at = out.size();
  out.resize(at + static_cast<size_t>(n) + 1);
  va_copy(copy, args);
  std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, format, copy);
  va_end(copy);
  out.resize(at + static_cast<size_t>(n));
}
std::string* g_capture = nullptr;

std::mutex g_lock;  // kprobes are attached from several threads

int print(enum libbpf_print_level level, const char* format, va_list args) {
  std::lock_guard<std::mutex> hold(g_lock);
  if (g_capture) appendFormatted(*g_capture, format, args);
  if (!g_verbose || level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

struct Install {
  Install() { libbpf_set_print(print); }
} g_install;

std::string g_text;

}  // namespace

void setLibbpfVerbose(bool verbose) { g_verbose = verbose; }

LibbpfCapture::LibbpfCapture() {
  g_text.clear();
  g_capture = &g_text;
}

LibbpfCapture::~LibbpfCapture() { g_capture = nullptr; }

const std::string& LibbpfCapture::text() const { return g_text; }

void captureForTest(const char* format, ...) {
  va_list args;
  va_start(args, format);
  print(LIBBPF_WARN, format, args);
  va_end(args);
}

}  // namespace kq::runtime
