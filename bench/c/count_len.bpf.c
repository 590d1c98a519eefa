// A passing filter and a count by an integer key.
// kq: trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 group by skb->len select count()
#include "common.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 10240);
  __type(key, __u64);
  __type(value, __u64);
} counts SEC(".maps");

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(count_len, struct sk_buff *skb) {
  if (skb->len <= 100) return 0;
  __u64 key = skb->len, zero = 0;
  __u64 *n = lookup_or_init(&counts, &key, &zero);
  if (n) __sync_fetch_and_add(n, 1);  // exact even when another program nests on this CPU
  return 0;
}
