#!/usr/bin/env python3
"""A NAT router between network namespaces, and marked UDP through it. `router()` builds
namespaces A (10.77.1.1), R and B (10.77.2.2), A-R and R-B joined by veth pairs: R forwards,
DNATs UDP to its port 9999 on to B's 10.77.2.2:9998, masquerades what it sends to B, and
drops UDP to port 9997 in its forward chain. Neighbours start unresolved, so each hop's
first datagram waits for ARP. As a script, it sends two marked datagrams from A: one to
R's 10.77.1.254:9999, which B reads on 9998; one to B's port 9997, which R drops.
Usage: nat_udp.py MARK NS_A NS_B"""
import subprocess

import netns_udp


def router(tag, cleanup):
    """Builds the namespaces, named with `tag`; `cleanup(args)` is called with a command
    that deletes each. The names (A, R, B) and the devices (A's, R's to A, R's to B, B's)."""
    a, r, b = (f"kq{side}{tag}" for side in "arb")
    devices = [f"kqv{side}{tag}" for side in ("a", "ra", "rb", "b")]
    rules = ("table ip kq {\n"
             "  chain kqpre { type nat hook prerouting priority -100; udp dport 9999 dnat to 10.77.2.2:9998; }\n"
             "  chain kqforward { type filter hook forward priority 0; udp dport 9997 drop; }\n"
             f'  chain kqpost {{ type nat hook postrouting priority 100; oifname "{devices[2]}" masquerade; }}\n'
             "}\n")
    steps = [["ip", "netns", "add", a], ["ip", "netns", "add", r], ["ip", "netns", "add", b],
             ["ip", "link", "add", devices[0], "netns", a, "type", "veth", "peer", "name", devices[1], "netns", r],
             ["ip", "link", "add", devices[3], "netns", b, "type", "veth", "peer", "name", devices[2], "netns", r],
             ["ip", "-n", a, "addr", "add", "10.77.1.1/24", "dev", devices[0]],
             ["ip", "-n", r, "addr", "add", "10.77.1.254/24", "dev", devices[1]],
             ["ip", "-n", r, "addr", "add", "10.77.2.254/24", "dev", devices[2]],
             ["ip", "-n", b, "addr", "add", "10.77.2.2/24", "dev", devices[3]]]
    steps += [["ip", "-n", ns, "link", "set", dev, "up"] for ns, dev in zip((a, r, r, b), devices)]
    steps += [["ip", "-n", ns, "link", "set", "lo", "up"] for ns in (a, r, b)]
    steps += [["ip", "-n", a, "route", "add", "default", "via", "10.77.1.254"],
              ["ip", "-n", b, "route", "add", "default", "via", "10.77.2.254"],
              ["ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"]]
    for ns in (a, r, b):
        cleanup(["ip", "netns", "delete", ns])
    for step in steps:
        subprocess.run(step, check=True, capture_output=True)
    subprocess.run(["ip", "netns", "exec", r, "nft", "-f", "-"], input=rules.encode(), check=True)
    return (a, r, b), devices


def send(mark):
    """In A: the two datagrams."""
    sender = netns_udp.sender(mark, "10.77.1.1", 40000)
    sender.sendto(b"x" * 100, ("10.77.1.254", 9999))
    sender.sendto(b"y" * 50, ("10.77.2.2", 9997))


if __name__ == "__main__":
    netns_udp.main(__file__, send, ("10.77.2.2", 9998), 100)
