#include "engine/forked_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include <fmt/format.h>

#include "runtime/link_reaper.h"

namespace kq::engine {
namespace {

/// Signals whose handling the session changed; the child starts with the defaults.
constexpr std::array<int, 9> kResetSignals = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE,
                                              SIGCHLD, SIGWINCH, SIGTSTP, SIGCONT};

bool makePipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0; }

/// The child's side: never returns.
[[noreturn]] void runChild(pid_t session, int out, int err, int attach,
                           std::atomic<uint64_t>* events, const ForkedRun::Body& body) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // the session went away: stop, detach, end
  if (getppid() != session) _exit(1);
  for (int sig : kResetSignals) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);

  RunHooks hooks;
  hooks.events = events;
  hooks.attached = [attach] {
    char ready = 'A';
    (void)!write(attach, &ready, 1);
  };
  int status = 1;
  try {
    status = body(hooks);
  } catch (const std::exception& e) {
    std::cerr << "kq: internal error: " << e.what() << "\n"
              << "  please report it with the query that caused it\n";
  }
  std::cout.flush();
  std::cerr.flush();
  runtime::reapAfterExit();
  _exit(status);
}

}  // namespace

Result<std::unique_ptr<ForkedRun>> ForkedRun::start(const Body& body) {
  int out[2], err[2], attach[2];
  if (!makePipe(out)) return Error{std::string("cannot make a pipe: ") + std::strerror(errno)};
  if (!makePipe(err)) {
    close(out[0]), close(out[1]);
    return Error{std::string("cannot make a pipe: ") + std::strerror(errno)};
  }
  if (!makePipe(attach)) {
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    return Error{std::string("cannot make a pipe: ") + std::strerror(errno)};
  }
  void* shared = mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  std::unique_ptr<ForkedRun> job(new ForkedRun());
  job->out_fd_ = out[0];
  job->err_fd_ = err[0];
  job->attach_fd_ = attach[0];
  if (shared == MAP_FAILED) {
    for (int fd : {out[1], err[1], attach[1]}) close(fd);
    return Error{std::string("cannot share memory with a job: ") + std::strerror(errno)};
  }
  job->events_ = new (shared) std::atomic<uint64_t>(0);
  pid_t session = getpid();
  pid_t pid = fork();
  if (pid == 0) runChild(session, out[1], err[1], attach[1], job->events_, body);
  for (int fd : {out[1], err[1], attach[1]}) close(fd);
  if (pid < 0) return Error{std::string("cannot start a process: ") + std::strerror(errno)};
  setpgid(pid, pid);  // also here: the session may signal the group before the child runs
  job->pid_ = pid;
  for (int fd : {job->out_fd_, job->err_fd_, job->attach_fd_}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return job;
}

ForkedRun::~ForkedRun() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int* fd : {&out_fd_, &err_fd_, &attach_fd_}) closeFd(*fd);
  if (events_) munmap(events_, sizeof(std::atomic<uint64_t>));
}

void ForkedRun::closeFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

bool ForkedRun::drain(int& fd, std::string* text) {
  char buffer[16384];
  while (fd >= 0) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      if (text) text->append(buffer, static_cast<size_t>(n));
      else attached_ = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    closeFd(fd);  // its end, or an error, which ends it as well
  }
  return false;
}

bool ForkedRun::collect(std::string& out, std::string& err) {
  drain(attach_fd_, nullptr);
  bool open = drain(out_fd_, &out);
  open = drain(err_fd_, &err) || open;
  if (reaped_) return true;
  int status = 0;
  pid_t got = waitpid(pid_, &status, open ? WNOHANG : 0);
  while (got < 0 && errno == EINTR) got = waitpid(pid_, &status, open ? WNOHANG : 0);
  if (got == 0) return false;
  reaped_ = true;
  if (got < 0) {
    ending_ = std::string("lost: ") + std::strerror(errno);
  } else {
    noteEnding(status);
  }
  // What it wrote before it ended is in the pipes now.
  drain(attach_fd_, nullptr);
  drain(out_fd_, &out);
  drain(err_fd_, &err);
  for (int* fd : {&out_fd_, &err_fd_, &attach_fd_}) closeFd(*fd);
  return true;
}

void ForkedRun::noteEnding(int status) {
  if (WIFEXITED(status)) {
    status_ = WEXITSTATUS(status);
    ending_ = WEXITSTATUS(status) == 0 ? "" : fmt::format("exit status {}", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    ending_ = name ? fmt::format("killed by SIG{}", name)
                   : fmt::format("killed by signal {}", WTERMSIG(status));
    crashed_ = !signalled_;
  }
}

void ForkedRun::signal(int sig) const {
  if (pid_ <= 0 || reaped_) return;
  signalled_ = true;
  kill(pid_, sig);
}

}  // namespace kq::engine
