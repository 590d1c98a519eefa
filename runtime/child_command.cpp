#include "runtime/child_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
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

std::unique_ptr<ChildCommand> ChildCommand::start(const std::string& command) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  if (pid == 0) {
    // Wait for the probes to be attached, then become the command.
    setpgid(0, 0);
    close(fds[1]);
    // Waits with poll, not read: a query of `syscall:read` would see the read's exit, its
    // entry made before the probes were attached. A byte written means go; the pipe closed
    // without one (kq ended before attaching), never run.
    pollfd go{fds[0], POLLIN, 0};
    while (poll(&go, 1, -1) < 0 && errno == EINTR) {
    }
    if (!(go.revents & POLLIN)) _exit(127);
    // The command starts as a shell would start it: no signal blocked (kq's session reads
    // its stop signals from a signalfd, with them blocked), none ignored.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever of the two runs first
  close(fds[0]);
  std::unique_ptr<ChildCommand> child(new ChildCommand());
  child->pid_ = pid;
  child->release_fd_ = fds[1];
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
