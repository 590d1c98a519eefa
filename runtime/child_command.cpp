#include "runtime/child_command.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

namespace kq::runtime {
namespace {

/// How long the command has to end after SIGTERM before it is killed.
constexpr int kTermGraceMs = 500;

/// Reaps `pid` if it has ended within `ms` milliseconds.
std::optional<int> reapWithin(pid_t pid, int ms) {
  for (int waited = 0;; waited += 10) {
    int status = 0;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return std::nullopt;  // not ours any more
    if (waited >= ms) return std::nullopt;
    timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

/// What the held child reads until it execs: in memory the ChildCommand keeps until it has
/// reaped the child.
struct ChildCommand::Launch {
  std::string command;
  int gate = -1;     // the pipe's read end: a byte means go
  int release = -1;  // its write end, which the child closes
  void* stack = MAP_FAILED;
};

namespace {

constexpr size_t kChildStackBytes = 256 * 1024;

/// The child's side, on its own stack and in kq's memory (CLONE_VM) until it execs: it
/// makes system calls that write nothing of kq's (raw ones where libc's wrapper is a
/// cancellation point, which marks the calling thread's descriptor: kq's), with every
/// signal blocked (no handler of kq's can run in it).
int holdThenExec(void* arg) {
  const auto* launch = static_cast<const ChildCommand::Launch*>(arg);
  setpgid(0, 0);
  syscall(SYS_close, launch->release);
  // Waits with poll, not read: a query of `syscall:read` would see the read's exit, its
  // entry made before the probes were attached. A byte written means go; the pipe closed
  // without one (kq ended before attaching), never run.
  pollfd go{launch->gate, POLLIN, 0};
  long polled;
  while ((polled = syscall(SYS_ppoll, &go, 1, nullptr, nullptr, 0)) < 0 && errno == EINTR) {
  }
  if (polled < 0 || !(go.revents & POLLIN)) _exit(127);
  // The command starts as a shell would start it: no signal blocked (kq's session reads
  // its stop signals from a signalfd, with them blocked), none ignored.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execl("/bin/sh", "sh", "-c", launch->command.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

}  // namespace

// The child shares kq's memory until it execs (as posix_spawn's does), instead of a fork's
// copy: after a fork, kq's every write to a page it had took a fault (the page shared,
// copy-on-write), about 1,500 of them (20-30 ms here) in the rest of a one-liner's run.
std::unique_ptr<ChildCommand> ChildCommand::start(const std::string& command) {
  std::unique_ptr<ChildCommand> child(new ChildCommand());
  auto launch = std::make_unique<Launch>();
  launch->command = command;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  launch->gate = fds[0];
  launch->release = fds[1];
  launch->stack = mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (launch->stack == MAP_FAILED) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    errno = err;
    return nullptr;
  }
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  pid_t pid = clone(holdThenExec, static_cast<char*>(launch->stack) + kChildStackBytes, CLONE_VM | SIGCHLD,
                    launch.get());
  int err = errno;
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    munmap(launch->stack, kChildStackBytes);
    errno = err;
    return nullptr;
  }
  setpgid(pid, pid);  // also here: whichever of the two runs first
  child->pid_ = pid;
  child->release_fd_ = fds[1];
  child->launch_ = std::move(launch);
  return child;
}

void ChildCommand::release() {
  if (released_) return;
  released_ = true;
  char go = 1;
  if (write(release_fd_, &go, 1) != 1) {
    // The child is gone already; the session notices when it waits.
  }
  close(release_fd_);
  release_fd_ = -1;
}

bool ChildCommand::exited() const {
  if (status_) return true;
  siginfo_t info{};
  // WNOWAIT: stop() reaps it and reads its status.
  return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_;
}

int ChildCommand::stop() {
  if (status_) return *status_;
  if (!released_) {
    // Never released (kq failed before attaching): the command must not run.
    kill(pid_, SIGKILL);
    close(release_fd_);
    release_fd_ = -1;
    signalled_ = true;
  }
  std::optional<int> status = reapWithin(pid_, 0);
  if (!status && !signalled_) {
    signalled_ = true;
    kill(-pid_, SIGTERM);
    status = reapWithin(pid_, kTermGraceMs);
  }
  if (!status) {
    kill(-pid_, SIGKILL);
    status = reapWithin(pid_, 5000);
  }
  // What the command left in its group goes too: they would hold kq's output open.
  kill(-pid_, SIGKILL);
  status_ = status.value_or(0);
  // Reaped (or gone past reaping): nothing runs on its stack any more.
  if (status && launch_ && launch_->stack != MAP_FAILED) {
    munmap(launch_->stack, kChildStackBytes);
    launch_->stack = MAP_FAILED;
  }
  return *status_;
}

ChildCommand::~ChildCommand() { stop(); }

std::string commandEnding(const ChildCommand& child, int status, bool verbose) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    std::string name = abbrev ? fmt::format("SIG{}", abbrev) : std::to_string(sig);
    return child.stoppedByKq() ? fmt::format("stopped by kq ({})", name)
                               : fmt::format("was killed by {}", name);
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  if (code == 0 && !verbose) return "";
  return fmt::format("exited with status {}", code);
}

}  // namespace kq::runtime
