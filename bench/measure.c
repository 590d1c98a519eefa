// Runs a command and writes what it cost to a file: seconds from fork to exit, CPU seconds
// (user + system, with the children it waited for), peak resident set in KiB (wait4's
// ru_maxrss) and exit status. SIGINT and SIGTERM are passed on to the command.
//
//   measure OUTFILE COMMAND [ARG...]
//
// Why not measure from Python: a process forked (or vforked) by a large parent starts with
// the parent's resident pages, and ru_maxrss keeps that peak through exec. This program is
// small, so the figure is the command's own.
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t child;

static void pass_on(int sig) {
  if (child > 0) kill(child, sig);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OUTFILE COMMAND [ARG...]\n", argv[0]);
    return 2;
  }
  struct sigaction sa = {.sa_handler = pass_on};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  double start = now();
  child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    execvp(argv[2], argv + 2);
    _exit(127);
  }
  int status;
  struct rusage usage;
  while (wait4(child, &status, 0, &usage) < 0) {
  }
  double wall = now() - start;
  FILE *out = fopen(argv[1], "w");
  if (!out) return 1;
  double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
               usage.ru_stime.tv_usec / 1e6;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  fprintf(out, "%.6f %.6f %ld %d\n", wall, cpu, usage.ru_maxrss, code);
  fclose(out);
  return 0;
}
