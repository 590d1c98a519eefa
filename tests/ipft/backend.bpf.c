// A tiny ipftrace2-style backend for testing `kq build --ipft` objects without ipftrace2:
// like ipft_body.bpf.h, it calls the extension's `module()` for every packet with the
// wanted mark, here from tp_btf/net_dev_xmit (or, with -DBACKEND_KPROBE or -DBACKEND_FENTRY,
// from ip_output), and sends the 64 bytes of `data` it filled
// (a ring buffer instead of ipftrace2's perf buffer). Built with clang -target bpf -g -O2.
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>  // struct pt_regs, for the kprobe backend
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

struct sk_buff {
  __u32 mark;
  __u32 len;
} __attribute__((preserve_access_index));

extern int module(void *ctx, struct sk_buff *skb, __u8 data[64]);

struct ipft_event {
  __u64 packet_id;
  __u32 backend_len;  // skb->len as the backend reads it, to compare with the extension's
  __u32 pad;
  __u8 data[64];
};

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);
} events SEC(".maps");

// [0]: packets with the mark, [1]: those module() dropped.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 2);
  __type(key, __u32);
  __type(value, __u64);
} counts SEC(".maps");

const volatile __u32 wanted_mark = 0xdeadbeef;

static void count(__u32 which) {
  __u64 *n = bpf_map_lookup_elem(&counts, &which);
  if (n) __sync_fetch_and_add(n, 1);
}

static __always_inline int handle(void *ctx, struct sk_buff *skb) {
  struct ipft_event e = {};
  if (BPF_CORE_READ(skb, mark) != wanted_mark) return 0;
  count(0);
  e.packet_id = (__u64)skb;
  e.backend_len = BPF_CORE_READ(skb, len);
  if (module(ctx, skb, e.data) != 0) {
    count(1);
    return 0;
  }
  bpf_ringbuf_output(&events, &e, sizeof(e), 0);
  return 0;
}

// The ctx module() gets is each ipftrace2 backend's own: pt_regs for kprobes, the argument
// array for fentry (the VM tier tests both; this kernel has neither).
// ip_output (called through dst_output once the IP header is complete) has the skb third.
#if defined(BACKEND_KPROBE)
SEC("kprobe/ip_output")
int BPF_KPROBE(xmit, void *net, void *sk, struct sk_buff *skb) { return handle(ctx, skb); }
#elif defined(BACKEND_FENTRY)
SEC("fentry/ip_output")
int BPF_PROG(xmit, void *net, void *sk, struct sk_buff *skb) { return handle(ctx, skb); }
#else
SEC("tp_btf/net_dev_xmit")
int BPF_PROG(xmit, struct sk_buff *skb, int rc, void *dev, unsigned int len) { return handle(ctx, skb); }
#endif

char LICENSE[] SEC("license") = "GPL";
