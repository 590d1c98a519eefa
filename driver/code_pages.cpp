#include "driver/code_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

// Both GNU ld and lld define these: the executable's first byte (its ELF header, at the
// start of its first, read-only segment) and the end of its code. Nothing between them is
// ever written (relocated data is in the writable segments after the code), so dropping
// these pages loses nothing: they are read back from the file.
extern "C" char __ehdr_start[];
extern "C" char etext[];

namespace kq::driver {
namespace {

/// Whether a debugger is attached: its breakpoints live in private copies of code pages,
/// which dropping would throw away.
bool traced() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (!status) return false;
  char line[128];
  long tracer = 0;
  while (std::fgets(line, sizeof line, status)) {
    if (std::sscanf(line, "TracerPid: %ld", &tracer) == 1) break;
  }
  std::fclose(status);
  return tracer != 0;
}

}  // namespace

void dropCodePages() {
  if (traced()) return;
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = (reinterpret_cast<uintptr_t>(__ehdr_start) + page - 1) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(etext) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace kq::driver
