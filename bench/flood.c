// The workload of the printing rows: a thread named kqflood calling getppid N times, which
// says on stderr what a call cost it: its own CPU time over the calls; or, with GAP, when it
// spins GAP ns between calls (slow enough for a reader to keep up), the time each call took
// (CLOCK_MONOTONIC around it: an interrupt the call raised is time taken from the thread).
//
//   flood N [GAP]
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
  double gap = argc > 2 ? atof(argv[2]) : 0;
  prctl(PR_SET_NAME, "kqflood");
  double cost = 0;
  if (gap <= 0) {
    cost = ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < calls; i++) syscall(SYS_getppid);
    cost = ns(CLOCK_THREAD_CPUTIME_ID) - cost;
  } else {
    for (long i = 0; i < calls; i++) {
      double until = ns(CLOCK_MONOTONIC) + gap;
      while (ns(CLOCK_MONOTONIC) < until) {
      }
      double start = ns(CLOCK_MONOTONIC);
      syscall(SYS_getppid);
      cost += ns(CLOCK_MONOTONIC) - start;
    }
  }
  fprintf(stderr, "flood: %.1f ns per call\n", cost / calls);
  return 0;
}
