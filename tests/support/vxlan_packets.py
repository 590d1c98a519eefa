#!/usr/bin/env python3
"""Sends packets through a VXLAN tunnel: a UDP datagram and a TCP SYN over IPv4, and a UDP
datagram over IPv6, each from a known port, encapsulated in UDP to port 4789 and sent out
of a veth device (no one answers: the neighbours are static). Run it in a network
namespace of its own (`unshare -n`): the devices go away with it.

Usage: vxlan_packets.py DEVICE UDP_PORT TCP_PORT
DEVICE is the veth the encapsulated packets leave through; the inner packets go from
10.88.0.1 and fd88::1 to 10.88.0.2 and fd88::2, from UDP_PORT to 5353 and TCP_PORT to 8080.
"""
import socket
import subprocess
import sys
import time

device, udp_port, tcp_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def ip(*args):
    subprocess.run(["ip", *args], check=True)


ip("link", "add", device, "type", "veth", "peer", "name", device + "p")
ip("addr", "add", "10.77.0.1/24", "dev", device)
ip("link", "set", device, "up")
ip("link", "set", device + "p", "up")
ip("link", "add", "kqvxlan", "type", "vxlan", "id", "5", "remote", "10.77.0.2", "dstport", "4789", "dev", device)
ip("addr", "add", "10.88.0.1/24", "dev", "kqvxlan")
ip("-6", "addr", "add", "fd88::1/64", "dev", "kqvxlan", "nodad")
ip("link", "set", "kqvxlan", "up")
ip("neigh", "add", "10.77.0.2", "lladdr", "02:00:00:00:00:02", "dev", device)
ip("neigh", "add", "10.88.0.2", "lladdr", "02:00:00:00:00:03", "dev", "kqvxlan")
ip("-6", "neigh", "add", "fd88::2", "lladdr", "02:00:00:00:00:03", "dev", "kqvxlan")

for family, host in ((socket.AF_INET, "10.88.0.1"), (socket.AF_INET6, "fd88::1")):
    udp = socket.socket(family, socket.SOCK_DGRAM)
    udp.bind((host, udp_port))
    udp.sendto(b"v" * 20, ("10.88.0.2" if family == socket.AF_INET else "fd88::2", 5353))
tcp = socket.socket()
tcp.bind(("10.88.0.1", tcp_port))
tcp.setblocking(False)
try:
    tcp.connect(("10.88.0.2", 8080))
except BlockingIOError:
    pass
time.sleep(0.1)
