#include <sys/resource.h>
#include <unistd.h>

#include <iostream>

#include "runtime/fd_output.h"
#include "runtime/link_reaper.h"
#include "tools/kq/cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  // Each attached kprobe holds a file descriptor; packet tracing without kprobe.multi
  // attaches a thousand or more.
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  // Not std::cout: its write errors would go unseen, and a pipe nobody reads would hold kq.
  kq::runtime::FdOutputBuffer stdout_buffer(STDOUT_FILENO);
  std::ostream out(&stdout_buffer);
  kq::driver::Io io{out, std::cerr, kq::driver::readFileFromDisk, isatty(STDERR_FILENO) == 1,
                 kq::driver::loadKernelEnvironment};
  int status = 1;
  try {
    status = kq::cli::run(std::vector<std::string>(argv + 1, argv + argc), io);
  } catch (const std::exception& e) {
    // A bug in kq, not a mistake of the user's: say so plainly rather than abort.
    out.flush();
    std::cerr << "kq: internal error: " << e.what() << "\n"
              << "  please report it with the command that caused it\n";
  }
  out.flush();
  std::cerr.flush();
  // Everything is written: what is left to detach is detached by a process of its own.
  kq::runtime::reapAfterExit();
  // Nothing is left to do: exit handlers and static destructors would only free memory
  // (after the reaper's fork, each page written is a fault and a copy).
  _exit(status);
}
