#!/usr/bin/env python3
"""Writes IPv4 and IPv6 packets (UDP, TCP, ICMP) into a TUN device, which the kernel then
receives without a MAC header (`tracepoint:net:netif_receive_skb` sees each, its MAC header
where its network header is). Run it in a network namespace of its own (`unshare -n`): the
device and the packets go away with it.

Usage: tun_packets.py DEVICE OUT.json
Writes the packets sent, as hex strings, to OUT.json.
"""
import fcntl
import json
import os
import socket
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

device, out_path = sys.argv[1], sys.argv[2]


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(proto, payload, src="10.11.0.1", dst="10.11.0.2"):
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0x1234, 0, 64, proto, 0,
                         socket.inet_aton(src), socket.inet_aton(dst))
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + payload


def ipv6(next_header, payload, src="fd00:11::1", dst="fd00:11::2"):
    return struct.pack("!IHBB16s16s", 0x60000000, len(payload), next_header, 64,
                       socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)) + payload


def udp(sport, dport, size):
    return struct.pack("!HHHH", sport, dport, 8 + size, 0) + b"u" * size


def tcp(sport, dport, flags, size=0):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 65535, 0, 0) + b"t" * size


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01
ICMP_ECHO = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"ping"

packets = [
    ipv4(17, udp(40000, 9000, 20)),
    ipv4(17, udp(40001, 53, 200)),
    ipv4(6, tcp(40002, 9001, SYN)),
    ipv4(6, tcp(40003, 9001, SYN | ACK)),
    ipv4(6, tcp(40004, 80, FIN | PSH | ACK, 300)),
    ipv4(1, ICMP_ECHO),
    ipv6(17, udp(40005, 9000, 30)),
    ipv6(17, udp(40006, 53, 200)),
    ipv6(6, tcp(40007, 9001, SYN)),
    ipv6(6, tcp(40008, 80, FIN | ACK, 10)),
]

tun = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", device.encode(), IFF_TUN | IFF_NO_PI))
control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(control, SIOCGIFFLAGS, struct.pack("16sH", device.encode(), 0)))[1]
fcntl.ioctl(control, SIOCSIFFLAGS, struct.pack("16sH", device.encode(), flags | IFF_UP))
for p in packets:
    os.write(tun, p)
time.sleep(0.05)
with open(out_path, "w") as f:
    json.dump([p.hex() for p in packets], f)
