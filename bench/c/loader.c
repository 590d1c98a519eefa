// Loads one reference BPF object, attaches every program in it, and drains its ring buffer
// until SIGINT or SIGTERM (or -d SECONDS): the hand-written counterpart of a kq one-liner,
// for bench/kernel_cost.py. On exit it says on stderr how many events it read and lost.
//
// It reads the ring every millisecond rather than sleeping on it: a record submitted while
// the reader is caught up queues a wakeup (an irq_work, a self-IPI: about 1-2 us in a VM),
// and a reader that keeps up with every event would have each pay for one.
//
//   loader OBJECT.bpf.o [-d SECONDS | -c COMMAND]     (LOADER_RING_BYTES=N: the ring's size)
//
// With -c it runs COMMAND (with /bin/sh -c) once everything is attached and stops when it
// exits, as `kq -c` does, for bench/run's start-up rows.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static int on_event(void *ctx, void *data, size_t size) {
  (void)data;
  (void)size;
  // The first record says so on standard output (bench/run's time to first event).
  if (++*(unsigned long long *)ctx == 1) {
    puts("first event");
    fflush(stdout);
  }
  return 0;
}

static int quiet(enum libbpf_print_level level, const char *format, va_list args) {
  if (level != LIBBPF_WARN) return 0;
  return vfprintf(stderr, format, args);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/// The sum over CPUs of entry 0 of a per-CPU array of counters.
static unsigned long long per_cpu_sum(int fd) {
  int cpus = libbpf_num_possible_cpus();
  unsigned long long *values = calloc(cpus > 0 ? cpus : 1, sizeof(*values)), sum = 0;
  unsigned int zero = 0;
  if (values && bpf_map_lookup_elem(fd, &zero, values) == 0) {
    for (int i = 0; i < cpus; ++i) sum += values[i];
  }
  free(values);
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 4 && (strcmp(argv[2], "-d") == 0 || strcmp(argv[2], "-c") == 0))) {
    fprintf(stderr, "usage: %s OBJECT.bpf.o [-d SECONDS | -c COMMAND]\n", argv[0]);
    return 2;
  }
  double duration = argc == 4 && argv[2][1] == 'd' ? atof(argv[3]) : 0;
  const char *command = argc == 4 && argv[2][1] == 'c' ? argv[3] : NULL;
  libbpf_set_print(quiet);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj) {
    fprintf(stderr, "loader: cannot open %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  // LOADER_RING_BYTES resizes the ring (a power of two), as kq's --buffer-size does.
  const char *ring_bytes = getenv("LOADER_RING_BYTES");
  struct bpf_map *ring_map = bpf_object__find_map_by_name(obj, "events");
  if (ring_bytes && ring_map) bpf_map__set_max_entries(ring_map, (unsigned)strtoul(ring_bytes, NULL, 0));
  int err = bpf_object__load(obj);
  if (err) {
    fprintf(stderr, "loader: cannot load %s: %s\n", argv[1], strerror(-err));
    bpf_object__close(obj);
    return 1;
  }
  struct bpf_program *prog;
  bpf_object__for_each_program(prog, obj) {
    if (!bpf_program__attach(prog)) {
      fprintf(stderr, "loader: cannot attach %s: %s\n", bpf_program__name(prog), strerror(errno));
      bpf_object__close(obj);
      return 1;
    }
  }

  unsigned long long events = 0;
  struct ring_buffer *ring = NULL;
  struct bpf_map *events_map = bpf_object__find_map_by_name(obj, "events");
  if (events_map) ring = ring_buffer__new(bpf_map__fd(events_map), on_event, &events, NULL);
  pid_t child = 0;
  if (command) {
    child = fork();
    if (child == 0) {
      execl("/bin/sh", "sh", "-c", command, (char *)NULL);
      _exit(127);
    }
  }
  double end = duration > 0 ? now() + duration : 0;
  while (!stopping && (end == 0 || now() < end)) {
    if (child > 0 && waitpid(child, NULL, WNOHANG) == child) break;
    if (ring) ring_buffer__consume(ring);
    usleep(1000);
  }
  if (ring) ring_buffer__consume(ring);
  struct bpf_map *lost_map = bpf_object__find_map_by_name(obj, "lost");
  unsigned long long lost = lost_map ? per_cpu_sum(bpf_map__fd(lost_map)) : 0;
  fprintf(stderr, "loader: %llu events, %llu lost\n", events, lost);
  ring_buffer__free(ring);
  bpf_object__close(obj);
  return 0;
}
