// The signals the interactive session handles itself, turned into bytes on a pipe that its
// loop polls with everything else (the self-pipe trick): Ctrl-C (stop the query in the
// foreground, or abandon the line being edited), SIGTERM and a hang-up (end the session),
// a resized terminal and a resumed one.
#pragma once

#include <signal.h>

#include <array>
#include <vector>

namespace kq::repl {

class SessionSignals {
 public:
  /// Installs the handlers; the previous ones come back when it is destroyed.
  SessionSignals();
  ~SessionSignals();
  SessionSignals(const SessionSignals&) = delete;
  SessionSignals& operator=(const SessionSignals&) = delete;

  /// Readable when a signal came.
  int fd() const { return read_fd_; }
  /// The signals that came since the last call, in order.
  std::vector<int> take();

 private:
  int read_fd_ = -1;
  std::array<struct sigaction, 5> previous_{};
};

}  // namespace kq::repl
