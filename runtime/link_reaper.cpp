#include "runtime/link_reaper.h"

#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace kq::runtime {
namespace {

std::mutex kept_mutex;
std::vector<bpf_link*>& kept() {
  static std::vector<bpf_link*> links;
  return links;
}

/// This process's open descriptors (but the one reading the list).
std::vector<int> openDescriptors() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return fds;
  int own = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && fd != own) fds.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return fds;
}

/// Whether `fd` holds something of the kernel's tracing: a BPF link, program, map or BTF,
/// or a perf event (what a link may hold beside its own descriptor).
bool tracingObject(int fd) {
  char path[32];
  char target[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  return std::strncmp(target, "anon_inode:", 11) == 0 &&
         (std::strstr(target, "bpf") || std::strstr(target, "btf") || std::strstr(target, "perf_event"));
}

/// The reaper's side: never returns. `gate` reads the end of kq's own descriptors.
[[noreturn]] void reap(std::vector<bpf_link*> links, int gate) {
  setsid();  // no terminal's signals, no terminal
  prctl(PR_SET_NAME, "kq-detach");  // what `ps` shows of it for the moment it lives
  int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) {
    if (null >= 0) dup2(null, fd);
  }
  for (int fd : openDescriptors()) {
    if (fd > 2 && fd != gate && !tracingObject(fd)) close(fd);
  }
  // Until kq has closed its descriptors of the links, one of those may be the last, and
  // kq's exit would wait for the detach: the pipe ends when kq is done with them.
  char byte;
  while (read(gate, &byte, 1) < 0 && errno == EINTR) {
  }
  detachLinks(std::move(links));
  _exit(0);
}

}  // namespace

void detachLinks(std::vector<bpf_link*> links) {
  constexpr size_t kThreads = 8;
  constexpr size_t kPerThread = 32;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < links.size(); i = next++) bpf_link__destroy(links[i]);
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < kThreads && t * kPerThread < links.size(); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

void closeInBackground(int fd) {
  std::thread([fd] { close(fd); }).detach();
  // The number leaves the table as close begins, before the wait; nothing else here opens
  // a descriptor that could take it meanwhile, but the spin is bounded all the same.
  for (int spins = 0; spins < 100000 && fcntl(fd, F_GETFD) != -1; ++spins) sched_yield();
}

void keepForReaper(bpf_link* link) {
  std::lock_guard<std::mutex> lock(kept_mutex);
  kept().push_back(link);
}

bool reaperHasLinks() {
  std::lock_guard<std::mutex> lock(kept_mutex);
  return !kept().empty();
}

void reapAfterExit() {
  std::vector<bpf_link*> links;
  {
    std::lock_guard<std::mutex> lock(kept_mutex);
    links.swap(kept());
  }
  if (links.empty()) return;
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) {
    detachLinks(std::move(links));
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(gate[1]);
    reap(std::move(links), gate[0]);
  }
  close(gate[0]);
  if (pid < 0) {
    close(gate[1]);
    detachLinks(std::move(links));
    return;
  }
  // The reaper holds every descriptor this process had: closing this process's own copies
  // of the links (and of what holds them: perf events, programs) detaches nothing. All of
  // them go, in one call: this process only exits now. Nothing of its memory is written
  // any more (libbpf's records of the links are left to the exit): after the fork each
  // first write to a page costs a fault, a copy for the reaper.
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (int fd : openDescriptors()) {
      if (fd > 2 && tracingObject(fd)) close(fd);
    }
  }
}

}  // namespace kq::runtime
