#include "host/btf_file.h"

#include <bpf/btf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace kq::host {

::btf* readKernelBtf(const std::string& path, ::btf* base) {
  // A module's split BTF is small, and this libbpf cannot make one from memory.
  if (base) return btf__parse_split(path.c_str(), base);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  void* mapped = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    mapped = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (mapped == MAP_FAILED) {
    // Kernels before 6.16 cannot map it: libbpf reads it.
    return btf__parse_raw(path.c_str());
  }
  ::btf* btf = btf__new(mapped, static_cast<uint32_t>(st.st_size));
  int err = errno;
  munmap(mapped, static_cast<size_t>(st.st_size));
  errno = err;
  return btf;
}

}  // namespace kq::host
