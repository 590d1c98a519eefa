#include "repl/session_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace kq::repl {
namespace {

constexpr std::array<int, 5> kHandled = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGCONT};

int g_write_fd = -1;

void onSignal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  (void)!write(g_write_fd, &byte, 1);  // a full pipe already holds a wake-up
  errno = saved;
}

}  // namespace

SessionSignals::SessionSignals() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
  read_fd_ = fds[0];
  g_write_fd = fds[1];
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < kHandled.size(); ++i) sigaction(kHandled[i], &action, &previous_[i]);
}

SessionSignals::~SessionSignals() {
  if (read_fd_ < 0) return;
  for (size_t i = 0; i < kHandled.size(); ++i) sigaction(kHandled[i], &previous_[i], nullptr);
  close(g_write_fd);
  close(read_fd_);
  g_write_fd = -1;
}

std::vector<int> SessionSignals::take() {
  std::vector<int> out;
  unsigned char bytes[64];
  for (;;) {
    ssize_t n = read(read_fd_, bytes, sizeof bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.insert(out.end(), bytes, bytes + n);
  }
  return out;
}

}  // namespace kq::repl
