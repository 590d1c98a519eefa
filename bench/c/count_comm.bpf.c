// A string-keyed aggregate: packets counted by the sending process's name.
// kq: trace tracepoint:net:net_dev_xmit group by comm select count()
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

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(count_comm) {
  struct comm_key key = {};
  __u64 zero = 0;
  bpf_get_current_comm(key.comm, sizeof(key.comm));
  __u64 *n = lookup_or_init(&counts, &key, &zero);
  if (n) __sync_fetch_and_add(n, 1);
  return 0;
}
