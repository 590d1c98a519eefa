#!/usr/bin/env python3
"""Sends marked UDP datagrams over loopback to a bound socket while a packet socket on `lo`
(as tcpdump opens) gets a clone of each frame sent and received and reads those; then,
with no packet socket, one more datagram, which has no clone. The bound socket reads the
datagrams only then: where the kernel frees a datagram read unseen by tracepoints, a later
skb at its address would join its journey (docs/language.md, "Journeys"), and none is
freed while the others are made.
Usage: cloned_udp.py MARK COUNT"""
import socket
import sys
import time

mark, count = int(sys.argv[1], 0), int(sys.argv[2])
receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
receiver.bind(("127.0.0.1", 0))
sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sender.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
capture.bind(("lo", 0))
for i in range(count):
    sender.sendto(bytes(100 + i), receiver.getsockname())
    time.sleep(0.01)
capture.settimeout(0.5)
try:
    while True:
        capture.recv(4096)
except socket.timeout:
    pass
capture.close()
time.sleep(0.05)
sender.sendto(bytes(300), receiver.getsockname())
for i in range(count + 1):
    receiver.recv(2048)
