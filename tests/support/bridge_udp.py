#!/usr/bin/env python3
"""A bridge between network namespaces, and a marked UDP datagram it floods. `bridge()`
builds namespaces A (10.79.0.1), B (10.79.0.2) and C (10.79.0.3), each joined by a veth
pair to a bridge in namespace S. A knows B's MAC address (a static neighbour), so its
datagram to B leaves at once; the bridge does not learn B's address (learning is off on
its port), so it floods the datagram, the original to one port and a clone to the other. B reads it; C drops it, a frame for
another host (SKB_DROP_REASON_OTHERHOST). As a script, it sends the datagram from A and
checks that B read it.
Usage: bridge_udp.py MARK NS_A NS_B"""
import subprocess

import netns_udp

PORT = 9996
PAYLOAD = 120


def mac(host):
    return f"02:79:00:00:00:{host:02x}"


def bridge(tag, cleanup):
    """Builds the namespaces, named with `tag`; `cleanup(args)` is called with a command
    that deletes each. The names (A, B, C, S), A's, B's and C's devices, the bridge's ports
    to them, and the bridge."""
    a, b, c, s = (f"kq{side}{tag}" for side in "abcs")
    hosts = [f"kqh{side}{tag}" for side in "abc"]
    ports = [f"kqp{side}{tag}" for side in "abc"]
    device = f"kqbr{tag}"
    for ns in (a, b, c, s):
        cleanup(["ip", "netns", "delete", ns])
    steps = [["ip", "netns", "add", ns] for ns in (a, b, c, s)]
    steps += [["ip", "-n", s, "link", "add", device, "type", "bridge"],
              ["ip", "-n", s, "link", "set", device, "up"]]
    for i, (ns, host, port) in enumerate(zip((a, b, c), hosts, ports), start=1):
        steps += [["ip", "link", "add", host, "netns", ns, "address", mac(i), "type", "veth",
                   "peer", "name", port, "netns", s],
                  ["ip", "-n", ns, "addr", "add", f"10.79.0.{i}/24", "dev", host],
                  ["ip", "-n", s, "link", "set", port, "master", device]]
        if ns == b:
            # Before B's own packets (IPv6's as its device comes up) teach the bridge its address.
            steps.append(["ip", "-n", s, "link", "set", port, "type", "bridge_slave", "learning", "off"])
        steps += [["ip", "-n", s, "link", "set", port, "up"], ["ip", "-n", ns, "link", "set", host, "up"]]
    steps.append(["ip", "-n", a, "neigh", "add", "10.79.0.2", "lladdr", mac(2), "dev", hosts[0], "nud", "permanent"])
    for step in steps:
        subprocess.run(step, check=True, capture_output=True)
    return (a, b, c, s), hosts, ports, device


def send(mark):
    """In A: the datagram."""
    netns_udp.sender(mark, "10.79.0.1", 40001).sendto(b"b" * PAYLOAD, ("10.79.0.2", PORT))


if __name__ == "__main__":
    netns_udp.main(__file__, send, ("10.79.0.2", PORT), PAYLOAD)
