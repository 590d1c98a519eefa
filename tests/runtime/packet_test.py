#!/usr/bin/env python3
"""Packets on the running kernel. `pcap("FILTER")`: marked UDP and TCP packets over loopback
(IPv4 and IPv6, with their Ethernet header) and packets written into a TUN device (no MAC
header), each filter's verdict on each packet compared with libpcap's own
(`pcap_offline_filter` on the same bytes, compiled for the same link type). The `net`
stdlib's properties (addresses, protocol, ports, `tuple`) on the loopback packets, against
what the captured frames hold. Usage: packet_test.py PATH_TO_KQ"""
import ctypes
import ctypes.util
import ipaddress
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import kq

SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support")
WORKDIR = tempfile.mkdtemp(prefix="kq-pcap-")
MARK = 0x6B710001
DLT_EN10MB, DLT_RAW = 1, 12


class BpfProgram(ctypes.Structure):
    _fields_ = [("bf_len", ctypes.c_uint), ("bf_insns", ctypes.c_void_p)]


class PacketHeader(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long),
                ("caplen", ctypes.c_uint32), ("len", ctypes.c_uint32)]


def libpcap():
    name = ctypes.util.find_library("pcap")
    return ctypes.CDLL(name) if name else None


PCAP = libpcap()


def libpcap_verdicts(filter_text, link_type, frames):
    """Whether libpcap's own interpreter matches each frame (bytes) with `filter_text`."""
    PCAP.pcap_open_dead.restype = ctypes.c_void_p
    PCAP.pcap_geterr.restype = ctypes.c_char_p
    handle = ctypes.c_void_p(PCAP.pcap_open_dead(link_type, 262144))
    program = BpfProgram()
    if PCAP.pcap_compile(handle, ctypes.byref(program), filter_text.encode(), 1, 0xFFFFFFFF) < 0:
        PCAP.pcap_close(handle)
        return [False] * len(frames)  # as kq: a filter with no meaning here matches nothing
    verdicts = []
    for frame in frames:
        header = PacketHeader(0, 0, len(frame), len(frame))
        verdicts.append(PCAP.pcap_offline_filter(ctypes.byref(program), ctypes.byref(header), frame) != 0)
    PCAP.pcap_freecode(ctypes.byref(program))
    PCAP.pcap_close(handle)
    return verdicts


def free_port(kind):
    with socket.socket(socket.AF_INET6, kind) as s:
        s.bind(("::", 0))
        return s.getsockname()[1]


UDP_PORT = free_port(socket.SOCK_DGRAM)
TCP_PORT = free_port(socket.SOCK_STREAM)

# Ports, protocols, hosts, TCP flags, lengths, payload bytes, and their combinations.
FILTERS = [
    "udp",
    "tcp",
    "ip6",
    "ip",
    "icmp",
    f"udp port {UDP_PORT}",
    f"udp and dst port {UDP_PORT}",
    f"port {UDP_PORT} or port {TCP_PORT}",
    "tcp[tcpflags] & tcp-syn != 0",
    "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
    "tcp[tcpflags] & tcp-fin != 0",
    "host 127.0.0.1",
    "dst host ::1",
    "ip6 and tcp",
    "len > 200",
    "len > 52",  # a loopback IPv4 datagram's length, to the byte
    "len > 48",  # a TUN IPv4 datagram's
    "len >= 52 and len <= 72",
    "greater 400 and not tcp",
    "udp[8] == 0x6b",
    "udp[140] == 0x6b or udp[140] == 0x75",  # past the first 128 bytes, in 150 of payload
    "ip[2:2] > 100",
    "ether proto 0x86dd",
    "udp port 53 or tcp port 9001 or icmp",
    "src net 10.11.0.0/16",
    "ip6 dst fd00:11::2 and port 80",
]


def columns(filters):
    return ", ".join(f'pcap("{f}") as f{i}' for i, f in enumerate(filters))


@unittest.skipIf(harness.skip_reason() is not None, harness.skip_reason() or "")
@unittest.skipIf(PCAP is None, "libpcap is not installed")
class PacketFilters(harness.KqTestCase):

    def compare(self, query, command, frames_file, link_type, filters=FILTERS):
        status, out, err = kq("-f", "json", query, "-c", command)
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines()]
        with open(frames_file) as f:
            frames = [bytes.fromhex(h) for h in json.load(f)]
        self.assertTrue(frames)
        expected = {i: libpcap_verdicts(text, link_type, frames) for i, text in enumerate(filters)}
        # One row per packet: its length and each filter's verdict, in any order.
        want = sorted((len(frame),) + tuple(expected[i][n] for i in range(len(filters)))
                      for n, frame in enumerate(frames))
        got = sorted((e["len"],) + tuple(e[f"f{i}"] for i in range(len(filters))) for e in events)
        self.assertEqual(got, want, "\n".join(f"f{i}: {t}" for i, t in enumerate(filters)))
        return expected

    def assertVaries(self, expected, filters):
        """Each of `filters` matches some of the packets and not others (so a verdict that
        were always the same would be caught)."""
        for text in filters:
            verdicts = expected[FILTERS.index(text)]
            self.assertIn(True, verdicts, text)
            self.assertIn(False, verdicts, text)

    def test_a_packet_without_ports_has_ports_0(self):
        # A datagram to a closed port on loopback, and the ICMP error it brings back: the
        # datagram has its ports; the ICMP message has none (its type, code and checksum are
        # where ports would be: they read 771 and a checksum before).
        sender = os.path.join(WORKDIR, "kqportless")
        shutil.copy(sys.executable, sender)
        send = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                "s.bind(('127.0.0.1', 0)); print(s.getsockname()[1], flush=True); "
                "s.sendto(b'x', ('127.0.0.1', 9))")
        status, out, err = kq("-f", "json", 'trace tracepoint:net:net_dev_xmit(skb) where comm == "kqportless" '
                              "group by tuple, sport, dport select tuple, sport, dport, count()",
                              "-c", f"{sender} -c \"{send}\"")
        self.assertEqual(status, 0, err)
        port = int(out.splitlines()[0])
        rows = json.loads(out.splitlines()[-1])["rows"]
        got = sorted((r["tuple"], r["sport"], r["dport"], r["count()"]) for r in rows)
        self.assertEqual(got, sorted([(f"127.0.0.1:{port} -> 127.0.0.1:9", port, 9, 1),
                                      ("127.0.0.1:0 -> 127.0.0.1:0", 0, 0, 1)]), out)

    def test_frames_from_the_mac_header_on_loopback(self):
        frames = os.path.join(WORKDIR, "loopback.json")
        query = (f"trace tracepoint:net:net_dev_queue where mark == {MARK:#x} "
                 f"select len, {columns(FILTERS)}")
        command = f"{sys.executable} {SUPPORT}/loopback_packets.py {frames} {MARK:#x} {UDP_PORT} {TCP_PORT}"
        expected = self.compare(query, command, frames, DLT_EN10MB)
        self.assertVaries(expected, ["udp", "ip6", f"udp port {UDP_PORT}", "tcp[tcpflags] & tcp-syn != 0",
                                     "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn", "host 127.0.0.1",
                                     "dst host ::1", "len > 52", "len >= 52 and len <= 72",
                                     "udp[140] == 0x6b or udp[140] == 0x75"])

    @unittest.skipIf(shutil.which("unshare") is None, "needs unshare(1) for a network namespace")
    def test_packets_without_a_mac_header_from_a_tun_device(self):
        if not os.path.exists("/dev/net/tun"):
            self.skipTest("this kernel has no /dev/net/tun")
        device = f"kqpcap{os.getpid() % 100000}"
        frames = os.path.join(WORKDIR, "tun.json")
        query = (f'trace tracepoint:net:netif_receive_skb(skb) where ifname == "{device}" '
                 f"select len, {columns(FILTERS)}")
        command = f"unshare -n {sys.executable} {SUPPORT}/tun_packets.py {device} {frames}"
        expected = self.compare(query, command, frames, DLT_RAW)
        self.assertVaries(expected, ["udp", "tcp", "ip6", "icmp", "tcp[tcpflags] & tcp-syn != 0",
                                     "tcp[tcpflags] & tcp-fin != 0", "len > 48",
                                     "udp port 53 or tcp port 9001 or icmp", "src net 10.11.0.0/16",
                                     "ip6 dst fd00:11::2 and port 80",
                                     "udp[140] == 0x6b or udp[140] == 0x75"])

    def test_where_keeps_exactly_the_matching_packets(self):
        # With and, or and not around filters, the skb bare and named: IPv6 UDP, or IPv4
        # packets of 200 bytes or more. Cast, the skb is no longer one the verifier knows:
        # its members are probe reads (as in kprobes) instead of loads.
        frames = os.path.join(WORKDIR, "where.json")
        query = (f"trace tracepoint:net:net_dev_queue(skb) where mark == {MARK:#x} and "
                 f'(pcap(skb, "ip6 and udp") or (pcap((struct sk_buff *)skb, "ip") and not pcap("len < 200"))) select len')
        command = f"{sys.executable} {SUPPORT}/loopback_packets.py {frames} {MARK:#x} {UDP_PORT} {TCP_PORT}"
        status, out, err = kq("-f", "json", query, "-c", command)
        self.assertEqual(status, 0, err)
        with open(frames) as f:
            frames = [bytes.fromhex(h) for h in json.load(f)]
        v6udp = libpcap_verdicts("ip6 and udp", DLT_EN10MB, frames)
        v4 = libpcap_verdicts("ip", DLT_EN10MB, frames)
        want = sorted(len(fr) for n, fr in enumerate(frames) if v6udp[n] or (v4[n] and len(fr) >= 200))
        got = sorted(json.loads(line)["len"] for line in out.splitlines())
        self.assertEqual(got, want)
        self.assertEqual(sorted(l for l in want if l < 200), [72])  # the small IPv6 datagram



def headers(frame):
    """What the `net` properties should say of an Ethernet frame with UDP or TCP over IP."""
    if struct.unpack("!H", frame[12:14])[0] == 0x86DD:
        proto, saddr, daddr, l4 = frame[20], frame[22:38], frame[38:54], 54
    else:
        proto, saddr, daddr, l4 = frame[23], frame[26:30], frame[30:34], 14 + (frame[14] & 0xF) * 4
    sport, dport = struct.unpack("!HH", frame[l4:l4 + 4])
    src, dst = str(ipaddress.ip_address(saddr)), str(ipaddress.ip_address(daddr))
    end = (lambda a, p: f"[{a}]:{p}") if len(saddr) == 16 else (lambda a, p: f"{a}:{p}")
    return (src, dst, proto, sport, dport, f"{end(src, sport)} -> {end(dst, dport)}", len(frame))


@unittest.skipIf(harness.skip_reason() is not None, harness.skip_reason() or "")
class NetProperties(harness.KqTestCase):

    def named_netns(self, prefix, *lo):
        """A network namespace `ip netns` names (deleted after the test), its loopback up
        (with `lo`'s further settings: "mtu", "1500"); its name."""
        name = f"{prefix}{os.getpid() % 100000}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "delete", name])
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up", *lo], check=True)
        return name

    def trace_around(self, query, netns, work):
        """Runs `query` (JSON) while Python runs `work` in namespace `netns`; the events and
        the output. Not `-c`, which traces only the command: the stack sends a packet in
        softirq too (an ACK, the rest of a large send), in whatever task runs then."""
        def kq_program_ids():
            listed = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, timeout=30)
            return {p["id"] for p in json.loads(listed.stdout or b"[]") if p.get("name", "").startswith("kq_")}

        # Attached once a program of this kq's is loaded (not one of an earlier kq's, which
        # the kernel frees a moment after it exits).
        before = kq_program_ids() if shutil.which("bpftool") else None
        proc = subprocess.Popen([harness.KQ, "-f", "json", "-d", "60s", query],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        deadline = time.monotonic() + 30
        while before is not None and proc.poll() is None and not kq_program_ids() - before and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1 if before is not None else 2)  # its links a moment after its programs
        subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", work], check=True, timeout=60)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        return [json.loads(line) for line in out.splitlines()], out

    def test_addresses_protocol_and_ports_of_ipv4_and_ipv6_packets(self):
        frames = os.path.join(WORKDIR, "properties.json")
        query = (f"trace tracepoint:net:net_dev_queue where mark == {MARK:#x} "
                 "select saddr, daddr, l4proto, sport, dport, tuple, len")
        command = f"{sys.executable} {SUPPORT}/loopback_packets.py {frames} {MARK:#x} {UDP_PORT} {TCP_PORT}"
        status, out, err = kq("-f", "json", query, "-c", command)
        self.assertEqual(status, 0, err)
        got = sorted(tuple(e[k] for k in ("saddr", "daddr", "l4proto", "sport", "dport", "tuple", "len"))
                     for e in map(json.loads, out.splitlines()))
        with open(frames) as f:
            want = sorted(headers(bytes.fromhex(h)) for h in json.load(f))
        self.assertEqual(got, want)
        # Both families, both protocols, and IPv4 printed as before: `127.0.0.1:40321 -> ...`.
        self.assertEqual({(row[0], row[2]) for row in want},
                         {("127.0.0.1", 17), ("127.0.0.1", 6), ("::1", 17), ("::1", 6)})
        self.assertIn(f"127.0.0.1:{UDP_PORT}", " ".join(row[5] for row in got))
        self.assertIn(f"[::1]:{TCP_PORT}", " ".join(row[5] for row in got))


    @unittest.skipIf(shutil.which("unshare") is None or shutil.which("ip") is None,
                     "needs unshare(1) and ip(8) for a tunnel in a network namespace")
    def test_inner_headers_of_tunnelled_packets(self):
        probe = subprocess.run(["unshare", "-n", "ip", "link", "add", "x", "type", "vxlan", "id", "1",
                                "dstport", "4789"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest(f"no VXLAN here: {probe.stderr.decode().strip()}")
        device = f"kqvx{os.getpid() % 100000}"
        query = (f'trace tracepoint:net:net_dev_queue where encapsulated and ifname == "{device}" '
                 "select tuple, l4proto, inner_saddr, inner_daddr, inner_l4proto, inner_sport, "
                 "inner_dport, inner_tuple")
        command = f"unshare -n {sys.executable} {SUPPORT}/vxlan_packets.py {device} {UDP_PORT} {TCP_PORT}"
        status, out, err = kq("-f", "json", query, "-c", command)
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines()]
        # The outer packets: UDP from the underlay's address to VXLAN's port.
        for e in events:
            self.assertRegex(e["tuple"], r"^10\.77\.0\.1:\d+ -> 10\.77\.0\.2:4789$")
            self.assertEqual(e["l4proto"], 17)
        inner = sorted((e["inner_saddr"], e["inner_daddr"], e["inner_l4proto"], e["inner_sport"],
                        e["inner_dport"], e["inner_tuple"]) for e in events)
        self.assertEqual(inner, sorted([
            ("10.88.0.1", "10.88.0.2", 17, UDP_PORT, 5353, f"10.88.0.1:{UDP_PORT} -> 10.88.0.2:5353"),
            ("10.88.0.1", "10.88.0.2", 6, TCP_PORT, 8080, f"10.88.0.1:{TCP_PORT} -> 10.88.0.2:8080"),
            ("fd88::1", "fd88::2", 17, UDP_PORT, 5353, f"[fd88::1]:{UDP_PORT} -> [fd88::2]:5353"),
        ]), out)

    @unittest.skipIf(shutil.which("ip") is None, "needs ip(8) to name a network namespace")
    def test_tcp_flags_and_the_devices_namespace_by_name(self):
        # A handshake, a byte and a close in a namespace `ip netns` names: each packet's flags
        # by name, and the namespace of its device, by inode and by name (kq reads the names
        # from /run/netns as it compiles). The filter is on the name: no packet of another
        # namespace is seen.
        name = self.named_netns("kqctx")
        inode = os.stat(f"/run/netns/{name}").st_ino
        work = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b'x'); "
                "a.recv(1); c.close(); a.recv(1); a.close()")
        query = (f'trace tracepoint:net:net_dev_xmit(skb) where dev_netns_name == "{name}" and l4proto == 6 '
                 "select tcp_flags, dev_netns, dev_netns_name, netns_name(netns) as task_netns")
        events, out = self.trace_around(query, name, work)
        flags = [e["tcp_flags"] for e in events]
        # The handshake in order; then the byte, the closes from both ends and their ACKs
        # (whether an ACK goes alone or with the FIN is the kernel's choice).
        self.assertEqual(flags[:3], ["SYN", "SYN|ACK", "ACK"], out)
        self.assertEqual(flags.count("PSH|ACK"), 1, out)
        self.assertEqual(flags.count("FIN|ACK"), 2, out)
        self.assertEqual(set(flags), {"SYN", "SYN|ACK", "ACK", "PSH|ACK", "FIN|ACK"}, out)
        self.assertEqual({(e["dev_netns"], e["dev_netns_name"], e["task_netns"]) for e in events},
                         {(inode, name, name)}, out)
        # The flags compared in the kernel, as the byte: only the handshake's first packet.
        events, out = self.trace_around(f'trace tracepoint:net:net_dev_xmit(skb) where dev_netns == {inode} '
                                        'and tcp_flags == "SYN" select tcp_flags', name, work)
        self.assertEqual([e["tcp_flags"] for e in events], ["SYN"], out)

    @unittest.skipIf(shutil.which("ip") is None or shutil.which("nft") is None,
                     "needs ip(8) and nft(8) (scripts/install-deps installs nftables) for conntrack and NAT")
    def test_conntrack_state_and_the_tuple_after_nat(self):
        # In a namespace of its own, netfilter tracks connections (a rule on `ct state`) and a
        # DNAT rule sends UDP for port 9999 to 9998: each packet's conntrack state, and its
        # tuple as the device sends it, translated.
        name = self.named_netns("kqct")
        rules = ("table ip kq {\n"
                 "  chain out { type filter hook output priority 0; ct state new,established accept; }\n"
                 "  chain nat { type nat hook output priority -100; udp dport 9999 dnat to 127.0.0.1:9998; }\n"
                 "}\n")
        subprocess.run(["ip", "netns", "exec", name, "nft", "-f", "-"], input=rules.encode(), check=True)
        work = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b'x'); a.recv(1); "
                "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                "r.bind(('127.0.0.1', 9998)); u.bind(('127.0.0.1', 40000)); u.sendto(b'y', ('127.0.0.1', 9999)); "
                "r.recv(1); r.sendto(b'z', ('127.0.0.1', 40000)); u.recv(1)")
        query = (f'trace tracepoint:net:net_dev_xmit(skb) where dev_netns_name == "{name}" '
                 "select l4proto, tcp_flags, ct_state, dport, tuple, ct_tuple")
        events, out = self.trace_around(query, name, work)
        tcp = [(e["tcp_flags"], e["ct_state"]) for e in events if e["l4proto"] == 6]
        self.assertEqual(tcp[:4], [("SYN", "NEW"), ("SYN|ACK", "ESTABLISHED_REPLY"), ("ACK", "ESTABLISHED"),
                                   ("PSH|ACK", "ESTABLISHED")], out)
        # The datagram sent to 9999 leaves for 9998; its reply comes back from 9999 (the
        # NAT undone); the entry's tuples say both.
        udp = [(e["tuple"], e["ct_state"], e["ct_tuple"]) for e in events if e["l4proto"] == 17]
        entry = "127.0.0.1:40000 -> 127.0.0.1:9999, reply 127.0.0.1:9998 -> 127.0.0.1:40000"
        self.assertEqual(udp, [("127.0.0.1:40000 -> 127.0.0.1:9998", "NEW", entry),
                               ("127.0.0.1:9999 -> 127.0.0.1:40000", "ESTABLISHED_REPLY", entry)], out)

    def test_the_sockets_cgroup_and_user(self):
        # A process in a cgroup of the test's makes a socket as user 65534 (its filesystem
        # user, which a socket takes; still root otherwise, to mark it) and sends a marked
        # datagram: at the device the packet's socket says both (the task's own `cgroup`
        # says the same here, as the sender sends it).
        mounts = [line.split() for line in open("/proc/mounts")]
        unified = next((m[1] for m in mounts if m[2] == "cgroup2"), None)
        if unified is None:
            self.skipTest("no cgroup v2 hierarchy is mounted")
        group = os.path.join(unified, f"kqsk{os.getpid()}")
        os.mkdir(group)
        self.addCleanup(os.rmdir, group)
        sender = (f"import os, socket; open('{group}/cgroup.procs', 'w').write(str(os.getpid())); "
                  "import ctypes; ctypes.CDLL(None).setfsuid(65534); "
                  "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                  f"s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, {MARK}); s.sendto(b'x', ('127.0.0.1', 9))")
        status, out, err = kq("-f", "json", f"trace tracepoint:net:net_dev_queue where mark == {MARK:#x} "
                              "select sk_cgroup, sk_uid, cgroup", "-c", f"{sys.executable} -c \"{sender}\"")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines()]
        inode = os.stat(group).st_ino  # a cgroup v2 id is its directory's inode
        self.assertEqual([(r["sk_cgroup"], r["sk_uid"], r["cgroup"]) for r in rows], [(inode, 65534, inode)], out)

    @unittest.skipIf(shutil.which("ip") is None, "needs ip(8) for a network namespace")
    def test_gso_fields_of_a_large_send(self):
        # 300,000 bytes over TCP on a loopback of MTU 1500: the stack sends GSO packets of
        # 1,448-byte segments (1500 less 20 of IP, 20 of TCP and 12 of timestamps), each of
        # ceil(payload / 1448) segments, and the payloads add up to what was sent (52 bytes
        # of headers a packet in `len`, 20 IP and 32 TCP: when net_dev_xmit fires, loopback's
        # transmit has taken the Ethernet header off the skb).
        name = self.named_netns("kqgso", "mtu", "1500")
        work = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 9997)); s.listen(); "
                "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b'x' * 300000); n = 0\n"
                "while n < 300000: n += len(a.recv(65536))")
        query = (f'trace tracepoint:net:net_dev_xmit(skb) where dev_netns_name == "{name}" and dport == 9997 '
                 'and tcp_flags != "SYN" select len, gso_size, gso_segs, gso_type, nr_frags')
        events, out = self.trace_around(query, name, work)
        self.assertEqual(sum(e["len"] - 52 for e in events), 300000, out)
        gso = [e for e in events if e["gso_size"]]
        self.assertGreater(len(gso), 0, out)
        for e in gso:
            self.assertEqual((e["gso_size"], e["gso_type"] & 1), (1448, 1), e)  # SKB_GSO_TCPV4
            self.assertEqual(e["gso_segs"], -(-(e["len"] - 52) // 1448), e)
        self.assertTrue(all(e["len"] <= 1500 for e in events if not e["gso_size"]), out)


if __name__ == "__main__":
    harness.main(sys.argv)
