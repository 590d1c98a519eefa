// A join of a call's entry and exit, written as a careful C author would: a plain hash of
// entry times by thread id on raw_syscalls filtered to getppid (110 on x86-64), as kq reads
// the syscalls tracepoints, and a power-of-two histogram of the differences.
// kq: trace tracepoint:syscalls:sys_exit_getppid
//       join tracepoint:syscalls:sys_enter_getppid as e on tid select hist(time - e.time)
#include "hist.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u64);
} starts SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(join_enter, struct pt_regs *regs, long id) {
  if (id != 110) return 0;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64 now = bpf_ktime_get_ns();
  bpf_map_update_elem(&starts, &tid, &now, BPF_ANY);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(join_exit, struct pt_regs *regs, long ret) {
  if (regs->orig_ax != 110) return 0;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64 *start = bpf_map_lookup_elem(&starts, &tid);
  if (!start) return 0;
  __u64 delta = bpf_ktime_get_ns() - *start;
  bpf_map_delete_elem(&starts, &tid);
  hist_add(delta);
  return 0;
}
