#!/usr/bin/env python3
"""Connects to a listener on loopback and sends 1000 bytes, for tests of TCP probes."""
import socket

server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
client = socket.create_connection(server.getsockname())
peer, _ = server.accept()
client.sendall(b"y" * 1000)
peer.recv(4096)
client.close()
