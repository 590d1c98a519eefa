#!/usr/bin/env python3
"""Sends marked UDP and TCP packets over loopback, IPv4 and IPv6, and writes the frames the
kernel transmitted, as a packet socket on `lo` captured them, to a JSON file: a list of hex
strings, each an Ethernet frame (what `tracepoint:net:net_dev_queue` sees, one for one).

Usage: loopback_packets.py OUT.json MARK UDP_PORT TCP_PORT

Every socket carries MARK (SO_MARK), so the kernel's own replies (SYN-ACKs, ACKs) do too;
only frames to or from the two ports are written.
"""
import json
import socket
import struct
import sys
import time

SO_MARK = 36
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4

out_path, mark, udp_port, tcp_port = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3]), int(sys.argv[4])

capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
capture.bind(("lo", 0))
capture.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)


def marked(family, kind):
    s = socket.socket(family, kind)
    s.setsockopt(socket.SOL_SOCKET, SO_MARK, mark)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return s


for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    # UDP: a listener (no ICMP port unreachable), three payloads of different sizes.
    receiver = marked(family, socket.SOCK_DGRAM)
    receiver.bind((host, udp_port))
    sender = marked(family, socket.SOCK_DGRAM)
    for size in (10, 150, 400):
        sender.sendto(b"k" * size, (host, udp_port))
        receiver.recv(4096)
    sender.close()
    receiver.close()
    # TCP: a handshake, 1000 bytes one way, 300 back, and the closing FINs.
    server = marked(family, socket.SOCK_STREAM)
    server.bind((host, tcp_port))
    server.listen(1)
    client = marked(family, socket.SOCK_STREAM)
    client.connect((host, tcp_port))
    peer, _ = server.accept()
    client.sendall(b"q" * 1000)
    peer.recv(4096)
    peer.sendall(b"r" * 300)
    client.recv(4096)
    client.close()
    peer.close()
    server.close()
    time.sleep(0.05)  # the last ACKs


def ports_of(frame):
    """The frame's (source, destination) ports for UDP and TCP over IPv4 and IPv6."""
    ethertype = struct.unpack("!H", frame[12:14])[0]
    if ethertype == 0x0800:
        ihl = (frame[14] & 0xF) * 4
        proto, l4 = frame[23], 14 + ihl
    elif ethertype == 0x86DD:
        proto, l4 = frame[20], 54
    else:
        return None
    if proto not in (6, 17) or len(frame) < l4 + 4:
        return None
    return struct.unpack("!HH", frame[l4:l4 + 4])


capture.setblocking(False)
frames = []
while True:
    try:
        frame, address = capture.recvfrom(1 << 16)
    except BlockingIOError:
        break
    if address[2] != PACKET_OUTGOING:  # each frame is seen going out and coming in
        continue
    ports = ports_of(frame)
    if ports and (udp_port in ports or tcp_port in ports):
        frames.append(frame.hex())
with open(out_path, "w") as f:
    json.dump(frames, f)
