#!/usr/bin/env python3
"""An XDP program and a TC one deciding the fate of marked UDP between two network
namespaces. `pair()` builds namespaces A (10.78.1.1) and B (10.78.1.2) joined by a veth
pair; on B's device an XDP program (`xdpdrop_9997`, generic or native XDP as asked) drops
UDP to port 9997, and a TC ingress program (`tcdrop_9996`) drops UDP to port 9996. As a
script, it sends three marked datagrams from A to B: to 9998 (B reads it), to 9997 and to
9996 (dropped on the way in).
Usage: xdp_udp.py MARK NS_A NS_B"""
import os
import subprocess

import netns_udp

# UDP's destination port past a 14-byte Ethernet header and a 20-byte IPv4 header: XDP and
# TC (at ingress) both see the packet from its Ethernet header.
PROGRAMS = r"""
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#define SEC(name) __attribute__((section(name), used))
static int udp_to(unsigned char *data, unsigned char *end, int port) {
  if (data + 38 > end || data[12] != 0x08 || data[13] != 0 || data[23] != 17) return 0;
  return data[36] == (port >> 8) && data[37] == (port & 0xff);
}
SEC("xdp") int xdpdrop_9997(struct xdp_md *ctx) {
  return udp_to((void *)(long)ctx->data, (void *)(long)ctx->data_end, 9997) ? XDP_DROP : XDP_PASS;
}
SEC("tc") int tcdrop_9996(struct __sk_buff *skb) {
  return udp_to((void *)(long)skb->data, (void *)(long)skb->data_end, 9996) ? TC_ACT_SHOT : TC_ACT_OK;
}
char _license[] SEC("license") = "GPL";
"""


def build(directory):
    """The programs compiled for BPF with BTF (fexit attaches by it): the object's path."""
    source, obj = os.path.join(directory, "xdp_udp.c"), os.path.join(directory, "xdp_udp.o")
    with open(source, "w") as f:
        f.write(PROGRAMS)
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", source,
                    "-o", obj], check=True)
    return obj


def pair(tag, cleanup, obj, mode="xdpgeneric"):
    """Builds the namespaces, named with `tag`, and attaches the programs of `obj` to B's
    device (`mode`: `xdpgeneric` or `xdpdrv`); `cleanup(args)` is called with a command that
    deletes each namespace. The names (A, B) and the devices (A's, B's)."""
    a, b = f"kqxa{tag}", f"kqxb{tag}"
    va, vb = f"kqxva{tag}", f"kqxvb{tag}"
    for ns in (a, b):
        cleanup(["ip", "netns", "delete", ns])
    steps = [["ip", "netns", "add", a], ["ip", "netns", "add", b],
             ["ip", "link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b],
             ["ip", "-n", a, "addr", "add", "10.78.1.1/24", "dev", va],
             ["ip", "-n", b, "addr", "add", "10.78.1.2/24", "dev", vb],
             ["ip", "-n", a, "link", "set", va, "up"], ["ip", "-n", b, "link", "set", vb, "up"],
             ["ip", "-n", a, "link", "set", "lo", "up"], ["ip", "-n", b, "link", "set", "lo", "up"],
             ["ip", "-n", b, "link", "set", "dev", vb, mode, "obj", obj, "sec", "xdp"],
             ["tc", "-n", b, "qdisc", "add", "dev", vb, "clsact"],
             ["tc", "-n", b, "filter", "add", "dev", vb, "ingress", "bpf", "da", "obj", obj, "sec", "tc"]]
    for step in steps:
        subprocess.run(step, check=True, capture_output=True)
    return (a, b), (va, vb)


def send(mark):
    """In A: the three datagrams, each from a port of its own."""
    for port, size in ((9998, 100), (9997, 70), (9996, 40)):
        netns_udp.sender(mark, "10.78.1.1", port + 30000).sendto(b"x" * size, ("10.78.1.2", port))


if __name__ == "__main__":
    netns_udp.main(__file__, send, ("10.78.1.2", 9998), 100)
