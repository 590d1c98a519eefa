#!/usr/bin/env python3
"""Sends marked UDP datagrams over loopback to a port nothing listens on, IPv4 (127.0.0.1)
then IPv6 (::1): each one the kernel drops as it arrives (SKB_DROP_REASON_NO_SOCKET), after
answering with an ICMP port unreachable (unmarked). One datagram at a time, so each is
dropped before the next is made.

Usage: closed_port_udp.py MARK PORT SIZE...   (SIZE: payload bytes of each datagram)
"""
import socket
import struct
import sys
import time

SO_MARK = 36

mark, port, sizes = int(sys.argv[1], 0), int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, SO_MARK, struct.pack("I", mark))
        for size in sizes:
            s.sendto(b"d" * size, (host, port))
            time.sleep(0.01)
