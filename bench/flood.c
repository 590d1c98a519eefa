// The workload of the printing rows: a thread named kqflood calling getppid N times, which
// says on stderr what each call cost it (its own CPU time, and wall time, over the calls).
//
//   flood N
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 1000000;
  prctl(PR_SET_NAME, "kqflood");
  double cpu = ns(CLOCK_THREAD_CPUTIME_ID), wall = ns(CLOCK_MONOTONIC);
  for (long i = 0; i < calls; i++) syscall(SYS_getppid);
  cpu = ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
  wall = ns(CLOCK_MONOTONIC) - wall;
  fprintf(stderr, "flood: %.1f ns CPU, %.1f ns wall per call\n", cpu / calls, wall / calls);
  return 0;
}
