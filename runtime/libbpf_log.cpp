#include "runtime/libbpf_log.h"

#include <bpf/libbpf.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace kq::runtime {
namespace {

// libbpf has one printer per process (libbpf_set_print takes no context): kq installs one,
// which routes each message to the capture of the thread that caused it, and to stderr
// with -v.
std::atomic<bool> g_verbose{false};

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
thread_local std::string* t_capture = nullptr;

std::mutex g_stderr;  // kprobes are attached from several threads

int print(enum libbpf_print_level level, const char* format, va_list args) {
  if (t_capture) appendFormatted(*t_capture, format, args);
  std::lock_guard<std::mutex> hold(g_stderr);
  if (!g_verbose || level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

struct Install {
  Install() { libbpf_set_print(print); }
} g_install;

}  // namespace

void setLibbpfVerbose(bool verbose) { g_verbose = verbose; }

LibbpfCapture::LibbpfCapture() : outer_(t_capture) { t_capture = &text_; }

LibbpfCapture::~LibbpfCapture() { t_capture = outer_; }

const std::string& LibbpfCapture::text() const { return text_; }

void captureForTest(const char* format, ...) {
  va_list args;
  va_start(args, format);
  print(LIBBPF_WARN, format, args);
  va_end(args);
}

}  // namespace kq::runtime
