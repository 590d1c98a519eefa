// QUERIES count() queries that share a filter, as a C programmer writes them: one program,
// the filter once, then each query's counter (a per-CPU array, one entry a query).
// kq: QUERIES times `trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 select count()`
#include "common.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, QUERIES);
  __type(key, __u32);
  __type(value, __u64);
} counts SEC(".maps");

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(queries, struct sk_buff *skb) {
  if (skb->len <= 100) return 0;
#pragma unroll
  for (__u32 i = 0; i < QUERIES; i++) {
    __u32 key = i;
    __u64 *n = bpf_map_lookup_elem(&counts, &key);
    if (n) __sync_fetch_and_add(n, 1);  // exact even when another program nests on this CPU
  }
  return 0;
}
