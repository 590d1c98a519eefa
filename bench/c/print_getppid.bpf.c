// The printing rows' reference: an event for each getppid of kqflood, on raw_syscalls
// filtered to the call (110 on x86-64), as kq does.
// kq: trace syscall:getppid where comm == "kqflood" select pid
#include "common.bpf.h"

struct event {
  struct header h;
  __u32 pid;
};

SEC("tp_btf/sys_enter")
int BPF_PROG(print_getppid, struct pt_regs *regs, long id) {
  if (id != 110) return 0;
  char comm[16] = {};
  bpf_get_current_comm(comm, sizeof(comm));
  // "kqflood" and its NUL: the first 8 bytes of the name.
  if (*(__u64 *)comm != 0x646f6f6c66716bULL) return 0;
  struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    return 0;
  }
  fill_header(&e->h);
  e->pid = e->h.pid;
  bpf_ringbuf_submit(e, 0);
  return 0;
}
