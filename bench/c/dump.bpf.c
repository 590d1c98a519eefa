// A typed-dump capture: the bytes of every skb over 100 bytes, for printing with BTF.
// kq: trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 select skb
// Room for the whole flood: bench/kernel_cost.py stops the reader while it runs.
#define RING_BYTES (16 << 20)
#include "common.bpf.h"

struct event {
  struct header h;
  __u64 address;
  __u8 bytes[sizeof(struct sk_buff)];
};

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(dump, struct sk_buff *skb) {
  if (skb->len <= 100) return 0;
  struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    return 0;
  }
  fill_header(&e->h);
  e->address = (__u64)skb;
  bpf_probe_read_kernel(e->bytes, sizeof(e->bytes), skb);
  bpf_ringbuf_submit(e, 0);
  return 0;
}
