#include "runtime/libbpf_log.h"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>

namespace kq::runtime {
namespace {

bool g_verbose = false;
std::string* g_capture = nullptr;

int print(enum libbpf_print_level level, const char* format, va_list args) {
  if (g_capture) {
    va_list copy;
    va_copy(copy, args);
    char buffer[4096];
    int n = std::vsnprintf(buffer, sizeof buffer, format, copy);
    va_end(copy);
    if (n > 0) g_capture->append(buffer, std::min<size_t>(n, sizeof buffer - 1));
  }
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

}  // namespace kq::runtime
