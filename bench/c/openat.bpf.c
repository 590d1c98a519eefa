// Start-up reference on a classic tracepoint: every openat's file name.
// kq: trace tracepoint:syscalls:sys_enter_openat select str(filename)
#include "common.bpf.h"

struct event {
  struct header h;
  char filename[64];
};

SEC("tracepoint/syscalls/sys_enter_openat")
int openat(struct trace_event_raw_sys_enter *ctx) {
  struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    return 0;
  }
  fill_header(&e->h);
  bpf_probe_read_user_str(e->filename, sizeof(e->filename), (const char *)ctx->args[1]);
  bpf_ringbuf_submit(e, 0);
  return 0;
}
