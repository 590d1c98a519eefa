#!/usr/bin/env python3
"""Connects to a listener on loopback and sends 1000 bytes, for tests of TCP probes.

Usage: send_tcp.py [ADDRESS]   (127.0.0.1 by default; `::1` for IPv6)
"""
import socket
import sys

address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
family = socket.AF_INET6 if ":" in address else socket.AF_INET
server = socket.socket(family)
server.bind((address, 0))
server.listen(1)
client = socket.create_connection(server.getsockname()[:2])
peer, _ = server.accept()
client.sendall(b"y" * 1000)
peer.recv(4096)
client.close()
peer.close()
