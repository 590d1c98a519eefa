#!/usr/bin/env python3
"""Sends UDP packets over loopback with SO_MARK, for tests of packet filters:
marked 0xdeadbeef with 200, 50 and 400 bytes of payload, unmarked 300, marked 7 with 500."""
import socket
import struct

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for mark, size in [(0xdeadbeef, 200), (0, 300), (0xdeadbeef, 50), (0xdeadbeef, 400), (7, 500)]:
    s.setsockopt(socket.SOL_SOCKET, 36, struct.pack("I", mark))  # SO_MARK
    s.sendto(b"x" * size, ("127.0.0.1", 9))
