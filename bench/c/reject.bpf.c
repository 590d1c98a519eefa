// Rejecting filter: a marked packet's length; no packet of the workload is marked.
// kq: trace tracepoint:net:net_dev_xmit(skb) where skb->mark == 0xdeadbeef select skb->len
#include "common.bpf.h"

struct event {
  struct header h;
  __u64 len;
};

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(reject, struct sk_buff *skb) {
  if (skb->mark != 0xdeadbeef) return 0;
  struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    return 0;
  }
  fill_header(&e->h);
  e->len = skb->len;
  bpf_ringbuf_submit(e, 0);
  return 0;
}
