// Start-up reference for a syscall aggregate: reads counted by command name, on
// raw_syscalls filtered to read (0 on x86-64), as kq does.
// kq: trace syscall:read group by comm select comm, count()
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

SEC("tp_btf/sys_enter")
int BPF_PROG(read_count, struct pt_regs *regs, long id) {
  if (id != 0) return 0;
  struct comm_key key = {};
  __u64 zero = 0;
  bpf_get_current_comm(key.comm, sizeof(key.comm));
  __u64 *n = lookup_or_init(&counts, &key, &zero);
  if (n) __sync_fetch_and_add(n, 1);
  return 0;
}
