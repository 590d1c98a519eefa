#!/usr/bin/env python3
"""Sends marked UDP datagrams over loopback to a bound socket, which reads them, while a
packet socket on `lo` (as tcpdump opens) gets a clone of each frame sent and received and
reads those too; then, with no packet socket, one more datagram, which has no clone.
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
    receiver.recv(2048)
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
receiver.recv(2048)
