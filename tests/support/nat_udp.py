#!/usr/bin/env python3
"""Two marked UDP datagrams from namespace A through a router namespace R into namespace B
(the namespaces nat_router() in packet_mode_test.py builds): one to R's address, port
9999, which R's DNAT sends on to B's 10.77.2.2:9998 (masquerading its source), read there;
one to B's port 9997, which R's forward chain drops. Usage: nat_udp.py MARK NS_A NS_B"""
import subprocess
import socket
import sys

mark, ns_a, ns_b = int(sys.argv[1], 0), sys.argv[2], sys.argv[3]
if ns_a == "--in-a":  # the sender, in A
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
    sender.bind(("10.77.1.1", 40000))
    sender.sendto(b"x" * 100, ("10.77.1.254", 9999))
    sender.sendto(b"y" * 50, ("10.77.2.2", 9997))
    sys.exit(0)
if ns_a == "--in-b":  # the receiver, in B: says when it listens, then what it read
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("10.77.2.2", 9998))
    receiver.settimeout(20)
    print("listening", flush=True)
    print(len(receiver.recv(2048)), flush=True)
    sys.exit(0)
receiver = subprocess.Popen(["ip", "netns", "exec", ns_b, sys.executable, __file__, str(mark), "--in-b", ""],
                            stdout=subprocess.PIPE, text=True)
assert receiver.stdout.readline() == "listening\n"
subprocess.run(["ip", "netns", "exec", ns_a, sys.executable, __file__, str(mark), "--in-a", ""], check=True)
read = receiver.stdout.readline().strip()
receiver.wait(timeout=20)
if read != "100":
    sys.exit(f"B read {read or 'nothing'}, not the 100-byte datagram")
