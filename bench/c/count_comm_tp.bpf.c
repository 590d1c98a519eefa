// count_comm.bpf.c on the classic tracepoint instead of tp_btf: what the attach method
// costs per event (bench/run's method rows).
#include "common.bpf.h"

struct comm_key {
  char comm[16];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 10240);
  __type(key, struct comm_key);
  __type(value, __u64);
} counts SEC(".maps");

SEC("tracepoint/net/net_dev_xmit")
int count_comm_tp(void *ctx) {
  struct comm_key key = {};
  __u64 zero = 0;
  bpf_get_current_comm(key.comm, sizeof(key.comm));
  __u64 *n = lookup_or_init(&counts, &key, &zero);
  if (n) __sync_fetch_and_add(n, 1);
  return 0;
}
