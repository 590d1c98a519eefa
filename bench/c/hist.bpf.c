// A power-of-two histogram of packet lengths (libbpf-tools' log2 slots).
// kq: trace tracepoint:net:net_dev_xmit(skb) select hist(skb->len)
#include "hist.bpf.h"

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(hist, struct sk_buff *skb) {
  hist_add_u32(skb->len);
  return 0;
}
