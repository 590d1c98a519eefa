// A power-of-two histogram of packet lengths (libbpf-tools' log2 slots).
// kq: trace tracepoint:net:net_dev_xmit(skb) select hist(skb->len)
#include "common.bpf.h"

#define SLOTS 65

struct hist {
  __u64 slots[SLOTS];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct hist);
} hists SEC(".maps");

/// floor(log2(v)) for v > 0 (libbpf-tools' bits.bpf.h).
static __always_inline __u32 log2_u32(__u32 w) {
  __u32 shift, r;
  r = (w > 0xFFFF) << 4; w >>= r;
  shift = (w > 0xFF) << 3; w >>= shift; r |= shift;
  shift = (w > 0xF) << 2; w >>= shift; r |= shift;
  shift = (w > 0x3) << 1; w >>= shift; r |= shift;
  r |= (w >> 1);
  return r;
}

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(hist, struct sk_buff *skb) {
  __u32 zero = 0;
  struct hist *h = bpf_map_lookup_elem(&hists, &zero);
  if (!h) return 0;
  __u32 len = skb->len;
  __u64 slot = len ? log2_u32(len) + 1 : 0;  // slot 0: below 1, then [1, 2), [2, 4), ...
  if (slot >= SLOTS) slot = SLOTS - 1;
  __sync_fetch_and_add(&h->slots[slot], 1);
  return 0;
}
