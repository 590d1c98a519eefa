// Start-up reference: every exec's command name.
// kq: trace tracepoint:sched:sched_process_exec select comm
#include "common.bpf.h"

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec) {
  struct header *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    return 0;
  }
  fill_header(e);
  bpf_ringbuf_submit(e, 0);
  return 0;
}
