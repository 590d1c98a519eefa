#!/usr/bin/env python3
"""A VXLAN tunnel between network namespaces, and a marked UDP datagram through it.
`tunnel()` builds namespaces A and B joined by a veth pair (the underlay, 10.80.0.1 and
10.80.0.2) and a VXLAN device in each (VNI 42, UDP port 4789) carrying the overlay,
10.81.0.1 and 10.81.0.2. As a script, it sends a marked datagram from A's overlay address
to B's port 9995, encapsulated in A and decapsulated in B, and checks that B read it.
Usage: vxlan_udp.py MARK NS_A NS_B"""
import subprocess

import netns_udp

PAYLOAD = 77


def tunnel(tag, cleanup):
    """Builds the namespaces, named with `tag`; `cleanup(args)` is called with a command
    that deletes each. The names (A, B), the underlay's devices (A's, B's) and the VXLAN
    devices (A's, B's)."""
    a, b = f"kqxa{tag}", f"kqxb{tag}"
    underlay = [f"kqua{tag}", f"kqub{tag}"]
    vxlan = [f"kqva{tag}", f"kqvb{tag}"]
    for ns in (a, b):
        cleanup(["ip", "netns", "delete", ns])
    steps = [["ip", "netns", "add", a], ["ip", "netns", "add", b],
             ["ip", "link", "add", underlay[0], "netns", a, "type", "veth", "peer", "name", underlay[1], "netns", b]]
    for i, (ns, dev, over) in enumerate(zip((a, b), underlay, vxlan)):
        local, remote = f"10.80.0.{i + 1}", f"10.80.0.{2 - i}"
        steps += [["ip", "-n", ns, "addr", "add", local + "/24", "dev", dev],
                  ["ip", "-n", ns, "link", "set", dev, "up"],
                  ["ip", "-n", ns, "link", "add", over, "type", "vxlan", "id", "42", "local", local,
                   "remote", remote, "dstport", "4789"],
                  ["ip", "-n", ns, "addr", "add", f"10.81.0.{i + 1}/24", "dev", over],
                  ["ip", "-n", ns, "link", "set", over, "up"]]
    for step in steps:
        subprocess.run(step, check=True, capture_output=True)
    return (a, b), underlay, vxlan


def send(mark):
    """In A: the datagram, into the tunnel."""
    netns_udp.sender(mark, "10.81.0.1", 40002).sendto(b"v" * PAYLOAD, ("10.81.0.2", 9995))


if __name__ == "__main__":
    netns_udp.main(__file__, send, ("10.81.0.2", 9995), PAYLOAD)
