// Start-up reference for a uprobe: every call of the C library's exit().
// kq: trace uprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:exit select pid
#include "common.bpf.h"

SEC("uprobe//usr/lib/x86_64-linux-gnu/libc.so.6:exit")
int BPF_KPROBE(uprobe_exit) {
  struct header *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    return 0;
  }
  fill_header(e);
  bpf_ringbuf_submit(e, 0);
  return 0;
}
