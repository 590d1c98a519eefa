#!/usr/bin/env python3
"""`trace packet` on the running kernel, which has neither kprobes nor fentry: packet mode
falls back to the tracepoints that carry an skb (tp_btf). Against packets whose path is
known: marked UDP datagrams to a closed port on loopback (IPv4 and IPv6), each dropped with
SKB_DROP_REASON_NO_SOCKET, and marked UDP and TCP traffic whose frames a packet socket
captured. The per-packet view, ipftrace2's JSON fields, the ready line, globs, `track`,
`group by func`, and what `--attach` and `graph` say where kprobes are missing.
Usage: packet_mode_test.py PATH_TO_KQ"""
import ipaddress
import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from collections import Counter, namedtuple

import harness
from harness import kq

SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support")
sys.path.insert(0, SUPPORT)
import bridge_udp  # noqa: E402
import nat_udp  # noqa: E402
import netns_udp  # noqa: E402
import vxlan_udp  # noqa: E402
import xdp_udp  # noqa: E402
WORKDIR = tempfile.mkdtemp(prefix="kq-packet-mode-")
# This run's own mark: other runs of kq's tests on this machine may send packets at once.
# The mark of this process's packets, another for each test (setUp): a datagram a socket
# read is freed later, on its CPU (skb_attempt_defer_free), so a test's last datagrams may
# be freed in the next test's session, with the mark it was sent with.
BASE_MARK = 0x6B720000 | (os.getpid() & 0xFFFF)
MARK = BASE_MARK
_tests_begun = 0
SIZES = [10, 150, 400]  # payloads of the datagrams to the closed port
UDP4, UDP6 = 14 + 20 + 8, 14 + 40 + 8  # loopback's Ethernet, IP and UDP headers
NO_SOCKET = "SKB_DROP_REASON_NO_SOCKET"
# Then, where XDP or TC programs are loaded, whether they were traced (", and 2 XDP/TC programs
# through fexit (...)", "; the XDP and TC programs loaded are not traced (...)"), and where
# nf_tables is loaded, whether its verdicts were (", and netfilter's verdicts through fexit",
# "; netfilter's verdicts are not traced (...)").
READY = re.compile(r"^kq: packet: ready, ([\d,]+|nothing)(?: (?:tracepoints?|functions?) through (\S+))?"
                   r"(?: \(([^)]*)\))?(?:, and \d+ XDP/TC .*|; the XDP and TC programs .*)?"
                   r"(?:, and netfilter's verdicts through fexit|; netfilter's verdicts are not traced .*)?$", re.M)


def free_port(kind):
    with socket.socket(socket.AF_INET6, kind) as s:
        s.bind(("::", 0))
        return s.getsockname()[1]


CLOSED_PORT = free_port(socket.SOCK_DGRAM)


def closed_port_command(*sizes):
    sizes = sizes or SIZES
    return (f"{sys.executable} {SUPPORT}/closed_port_udp.py {MARK:#x} {CLOSED_PORT} "
            + " ".join(map(str, sizes)))


def attached_through(err):
    """What the ready line on stderr says: (attached count, method)."""
    m = READY.search(err)
    return (int(m[1].replace(",", "")) if m[1] != "nothing" else 0, m[2]) if m else None


def kq_around(*args, command):
    """Runs kq with `args` until its ready line, then the shell command `command`, then
    stops kq with SIGINT: (status, stdout, stderr). Not `-c`: that keeps to the command's
    processes, and a packet may be handled in softirq on behalf of any task."""
    proc = subprocess.Popen([harness.KQ, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    said = b""
    try:
        deadline = time.monotonic() + 60
        while attached_through(said.decode()) is None and time.monotonic() < deadline:
            readable, _, _ = select.select([proc.stderr], [], [], 1)
            chunk = os.read(proc.stderr.fileno(), 4096) if readable else b""
            if readable and not chunk:
                break  # kq ended before it was ready
            said += chunk
        if attached_through(said.decode()):
            subprocess.run(command, shell=True, check=True, timeout=60)
            time.sleep(0.2)  # the last events through the ring buffer
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    return proc.returncode, out.decode("utf-8", "replace"), (said + err).decode("utf-8", "replace")


def how_packet_mode_attaches():
    """The method packet mode uses here, from the ready line of a run sending nothing."""
    status, _, err = kq(f"trace packet where mark == {MARK:#x}", "-c", "true")
    ready = attached_through(err)
    if status != 0 or not ready:
        raise AssertionError(f"packet mode printed no ready line (exit {status}): {err}")
    return ready[1]


def btf_has_enumerator(name):
    try:
        out = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                             capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        return None
    return f"'{name}'" in out.stdout if out.returncode == 0 else None


# The per-packet view: `packet 0x...: N events in T`, a header row, one row per event.
Packet = namedtuple("Packet", "address count span rows")
PACKET = re.compile(r"^packet (0x[0-9a-f]+): (\d+) events? in (.+)$")
UNITS = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}


def packet_view(text):
    """The packets of the per-packet view; each row a dict by column, a drop's reason under
    `drop`, ELAPSED in nanoseconds under `elapsed_ns`."""
    packets = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        if lines[0].startswith("TIME "):
            continue  # the live lines, each event as it came
        m = PACKET.match(lines[0])
        if not m:
            raise AssertionError(f"not a packet's header: {lines[0]!r}\n{text}")
        header = lines[1].split()
        rows = []
        for line in lines[2:]:
            # Columns are two or more spaces apart; `+1.2 µs` and tuples have single ones.
            cells = re.split(r"\s{2,}", line.strip())
            row = dict(zip(header, cells))
            if len(cells) == len(header) + 1:
                row["drop"] = cells[-1]
            number, unit = row["ELAPSED"].lstrip("+").split()
            row["elapsed_ns"] = float(number) * UNITS[unit]
            rows.append(row)
        packets.append(Packet(m[1], int(m[2]), m[3], rows))
    return packets


def json_events(out):
    """Streamed events, without the summary kq ends with."""
    return [e for e in map(json.loads, out.splitlines()) if "summary" not in e]


def frame_facts(frame):
    """(length, tuple) of an Ethernet frame with UDP or TCP over IP, as `select len, tuple`
    shows it where the frame is queued to `lo`."""
    if struct.unpack("!H", frame[12:14])[0] == 0x86DD:
        saddr, daddr, l4 = frame[22:38], frame[38:54], 54
        end = lambda a, p: f"[{ipaddress.ip_address(a)}]:{p}"
    else:
        saddr, daddr, l4 = frame[26:30], frame[30:34], 14 + (frame[14] & 0xF) * 4
        end = lambda a, p: f"{ipaddress.ip_address(a)}:{p}"
    sport, dport = struct.unpack("!HH", frame[l4:l4 + 4])
    return len(frame), f"{end(saddr, sport)} -> {end(daddr, dport)}"


def loopback_traffic(query):
    """kq's JSON events for `query` over loopback_packets.py's marked traffic, and the
    (length, tuple) of each frame it sent."""
    frames_file = os.path.join(WORKDIR, "frames.json")
    udp, tcp = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    command = f"{sys.executable} {SUPPORT}/loopback_packets.py {frames_file} {MARK:#x} {udp} {tcp}"
    result = kq_around(*query, command=command)
    with open(frames_file) as f:
        frames = [frame_facts(bytes.fromhex(h)) for h in json.load(f)]
    return result, frames


@unittest.skipIf(harness.skip_reason() is not None, harness.skip_reason() or "")
class PacketModeThroughTracepoints(harness.KqTestCase):

    def setUp(self):
        global MARK, _tests_begun
        super().setUp()
        _tests_begun += 1
        MARK = BASE_MARK ^ ((_tests_begun & 0x7F) << 24)

    @classmethod
    def setUpClass(cls):
        method = how_packet_mode_attaches()
        if method != "tp_btf":
            raise unittest.SkipTest(f"packet mode attaches through {method} here, not the "
                                    "tracepoint fallback (tests/vm covers kernel functions)")

    def assertDroppedDatagrams(self, packets):
        """`packets` are the closed-port datagrams, in the order sent: each from its
        queueing on `lo` to its drop, its events in time order."""
        self.assertEqual(len(packets), 2 * len(SIZES), packets)
        sent = [(size + UDP4, r"127\.0\.0\.1:\d+ -> 127\.0\.0\.1") for size in SIZES] + \
               [(size + UDP6, r"\[::1\]:\d+ -> \[::1\]") for size in SIZES]
        for packet, (length, addresses) in zip(packets, sent):
            rows = packet.rows
            self.assertEqual(packet.count, len(rows))
            self.assertEqual(rows[0]["ELAPSED"], "+0 ns")
            self.assertEqual("+" + packet.span, rows[-1]["ELAPSED"])
            self.assertEqual([r["elapsed_ns"] for r in rows], sorted(r["elapsed_ns"] for r in rows))
            self.assertEqual((rows[0]["FUNCTION"], rows[0]["len"]), ("net:net_dev_queue", str(length)))
            # The MAC header pulled as `lo` hands the frame to the stack.
            received = [r["len"] for r in rows if r["FUNCTION"] == "net:netif_receive_skb"]
            self.assertEqual(received, [str(length - 14)])
            for row in rows:
                self.assertRegex(row["tuple"], rf"^{addresses}:{CLOSED_PORT}$")
            self.assertEqual([(r["FUNCTION"], r.get("drop")) for r in rows if "drop" in r],
                             [("skb:kfree_skb", f"drop: {NO_SOCKET}")])
            self.assertEqual(rows[-1]["FUNCTION"], "skb:kfree_skb")
        firsts = [p.rows[0]["TIME"] for p in packets]
        self.assertEqual(firsts, sorted(firsts))

    def test_datagrams_to_a_closed_port_each_a_packet_ending_in_its_drop(self):
        if btf_has_enumerator(NO_SOCKET) is False:
            self.skipTest(f"this kernel's BTF has no {NO_SOCKET}")
        status, out, err = kq_around(f"trace packet where mark == {MARK:#x} select len, tuple",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        self.assertDroppedDatagrams(packet_view(out))
        # Before the per-packet view, each event was a line as it came, as pwru prints.
        live = out.split("\n\n")[0].splitlines()
        self.assertRegex(live[0], r"^TIME +SKB +CPU +COMM +FUNCTION +len +tuple$")
        events = sum(len(p.rows) for p in packet_view(out))
        self.assertEqual(len(live) - 1, events, out)
        drops = [line for line in live if " skb:kfree_skb " in line]
        self.assertEqual(len(drops), 6, out)
        self.assertTrue(all(line.endswith(f"drop: {NO_SOCKET}") for line in drops), drops)
        # --packet-view live: the lines alone; end: the per-packet view alone.
        status, out, err = kq_around("--packet-view", "live", f"trace packet where mark == {MARK:#x} select len",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        self.assertNotIn("\npacket 0x", out)
        self.assertEqual(sum(" skb:kfree_skb " in line for line in out.splitlines()), 6, out)
        status, out, err = kq_around("--packet-view", "end", f"trace packet where mark == {MARK:#x} select len",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        self.assertTrue(out.startswith("packet 0x"), out)

    def test_ready_line_says_how_packet_mode_attached(self):
        # kq_around waits for the line, then sends: every datagram is seen.
        status, out, err = kq_around(f"trace packet where mark == {MARK:#x} select len, tuple",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        self.assertDroppedDatagrams(packet_view(out))
        # Every packet function counted; the tracepoints carrying an skb attached.
        attached, method = attached_through(err)
        self.assertEqual(method, "tp_btf")
        self.assertGreater(attached, 0)
        # Then netfilter's verdicts where nf_tables is in the kernel (built in, here): through
        # fexit, or why not.
        with open("/proc/kallsyms") as symbols:
            nft = any(line.split()[2] == "nft_do_chain" for line in symbols if len(line.split()) > 2)
        netfilter = r"(, and netfilter's verdicts through fexit|; netfilter's verdicts are not traced \(fexit: .+\))" if nft else ""
        self.assertRegex(err, rf"(?m)^kq: packet: ready, {attached} tracepoints through tp_btf{netfilter}$")

    def test_marked_udp_and_tcp_exactly_in_the_per_packet_view(self):
        (status, out, err), frames = loopback_traffic(
            [f"trace packet where mark == {MARK:#x} select len, tuple"])
        self.assertEqual(status, 0, err)
        packets = packet_view(out)
        rows = [r for p in packets for r in p.rows]
        queued = sorted((int(r["len"]), r["tuple"]) for r in rows if r["FUNCTION"] == "net:net_dev_queue")
        self.assertEqual(queued, sorted(frames))
        self.assertEqual({t.startswith("[") for _, t in frames}, {True, False})  # IPv4 and IPv6
        for p in packets:
            self.assertEqual(p.count, len(p.rows))
            self.assertEqual([r["elapsed_ns"] for r in p.rows], sorted(r["elapsed_ns"] for r in p.rows))
            # An skb freed ends its part of the packet: its address, used again, is another
            # packet's. The frames' capture (a packet socket) gets clones of each frame,
            # which are the packet's too: the clones' own events, on their own skbs.
            skbs = Counter(r.get("SKB", p.address) for r in p.rows)
            self.assertEqual(p.span.endswith(f", on {len(skbs)} skbs"), len(skbs) > 1, p)
            for skb in skbs:
                mine = [r for r in p.rows if r.get("SKB", p.address) == skb]
                frees = [i for i, r in enumerate(mine) if r["FUNCTION"] in ("skb:kfree_skb", "skb:consume_skb")]
                self.assertIn(frees, ([], [len(mine) - 1]), p)
            if len(skbs) > 1:
                self.assertEqual(p.rows[0]["SKB"], p.address)
                clones = [r for r in p.rows if r["SKB"] != p.address]
                self.assertTrue(all(r["FUNCTION"] in ("skb:skb_copy_datagram_iovec", "skb:consume_skb")
                                    for r in clones), p)

    def test_json_has_ipftrace2_fields_and_typed_values(self):
        (status, out, err), frames = loopback_traffic(
            ["-f", "json", f"trace packet where mark == {MARK:#x} select len, tuple"])
        self.assertEqual(status, 0, err)
        events = json_events(out)
        for e in events:
            want = {"packet_id", "timestamp", "processor_id", "module", "function", "is_return", "journey",
                    "len", "tuple"}
            if e["function"] == "skb:kfree_skb":
                want.add("drop_reason")
            self.assertEqual(set(e), want, e)
            self.assertRegex(e["packet_id"], r"^0x[0-9a-f]{16}$")
            self.assertRegex(e["journey"], r"^0x[0-9a-f]+$")
            self.assertIs(type(e["timestamp"]), int)
            self.assertIs(type(e["processor_id"]), int)
            self.assertIs(e["is_return"], False)
            self.assertEqual(e["module"], "vmlinux")
            self.assertRegex(e["function"], r"^[a-z0-9_]+:[a-z0-9_]+$")
            self.assertIs(type(e["len"]), int)
        queued = sorted((e["len"], e["tuple"]) for e in events if e["function"] == "net:net_dev_queue")
        self.assertEqual(queued, sorted(frames))
        # The TCP data went through the receiving socket.
        self.assertIn("skb:skb_copy_datagram_iovec", {e["function"] for e in events})

    def test_caller_is_the_function_that_hit_each_tracepoint(self):
        # Each tracepoint is hit by one function of the transmit path, whatever sent the
        # packet: the kernel's stack, past the tracing machinery's frames, says which.
        status, out, err = kq_around("-f", "json", f"trace packet(net_dev_queue, net_dev_xmit) "
                                     f"where mark == {MARK:#x} select caller",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        callers = {(e["function"], e["caller"]) for e in json_events(out)}
        self.assertEqual(callers, {("net:net_dev_queue", "__dev_queue_xmit"),
                                   ("net:net_dev_xmit", "dev_hard_start_xmit")})
        # As a key: call sites and stacks of one function are one group.
        status, out, err = kq_around(f"trace packet(net_dev_xmit) where mark == {MARK:#x} "
                                     "group by caller select count()", command=closed_port_command())
        self.assertEqual(status, 0, err)
        rows = [line.split() for line in out.splitlines() if line.startswith("dev_hard_start_xmit")]
        self.assertEqual(rows, [["dev_hard_start_xmit", "6"]], out)

    def test_json_drop_reason(self):
        status, out, err = kq_around("-f", "json", f"trace packet where mark == {MARK:#x}",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        events = json_events(out)
        self.assertEqual(Counter(e.get("drop_reason") for e in events if e["function"] == "skb:kfree_skb"),
                         {NO_SOCKET: 6})
        self.assertEqual(sum(e["function"] == "net:net_dev_queue" for e in events), 6)

    def test_globs_narrow_the_tracepoints(self):
        status, out, err = kq_around("-f", "json", f"trace packet(net_dev_*) where mark == {MARK:#x}",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        attached, method = attached_through(err)
        self.assertEqual(method, "tp_btf")
        # A few tracepoints: the ready line names them, with those where skbs are freed,
        # attached (showing nothing) so that each freed skb's journey ends.
        self.assertRegex(err, r"through tp_btf \((net_dev_\w+|kfree_skb|consume_skb)(, (net_dev_\w+|kfree_skb|consume_skb))*\)\n")
        self.assertIn("kfree_skb", err)
        _, _, full = kq(f"trace packet where mark == {MARK:#x}", "-c", "true")
        self.assertLess(attached, attached_through(full)[0])
        functions = Counter(e["function"] for e in json_events(out))
        self.assertEqual(functions["net:net_dev_queue"], 6)
        self.assertTrue(all(f.startswith("net:net_dev_") for f in functions), functions)
        # Each datagram its own journey, though the next skb is often at the address of the
        # one freed before it.
        journeys = Counter(e["journey"] for e in json_events(out) if e["function"] == "net:net_dev_queue")
        self.assertEqual(sorted(journeys.values()), [1] * 6, out)

    def test_globs_naming_only_functions_need_kprobes_here(self):
        # The sites kept to end journeys come only beside sites shown: alone, they would
        # attach here and show nothing.
        status, out, err = kq(f"trace packet(ip_*) where mark == {MARK:#x}", "-c", "true")
        self.assertEqual((status, out), (1, ""), err)
        self.assertRegex(err, r"cannot attach to packet \(\d+ functions\) on this kernel \[CannotAttach\]")
        self.assertNotIn("ready", err)

    def test_a_glob_naming_nothing_is_an_error(self):
        status, out, err = kq("trace packet(nope_*)", "-c", "true")
        self.assertEqual((status, out), (1, ""))
        self.assertIn("no traceable function matching `nope_*` takes a `struct sk_buff *`", err)
        self.assertIn("[UnknownFunction]", err)

    def test_a_packet_sockets_clones_are_on_their_packets_journey(self):
        # Each datagram is queued once on `lo`; a packet socket gets two clones of it (as
        # sent and as received), which share its data: one journey, three skbs, each freed
        # once. The datagram sent with no packet socket open is a journey of its own skb.
        command = f"{sys.executable} {SUPPORT}/cloned_udp.py {MARK:#x} 3"
        status, out, err = kq_around("-f", "json", f"trace packet where mark == {MARK:#x} select len, tuple",
                                     command=command)
        self.assertEqual(status, 0, err)
        journeys = {}
        for e in json_events(out):
            journeys.setdefault(e["journey"], []).append(e)
        queued = [j for j, events in journeys.items()
                  if any(e["function"] == "net:net_dev_queue" for e in events)]
        self.assertEqual(len(queued), 4, journeys)
        self.assertEqual(len(journeys), 4, journeys)  # no clone is on a journey of its own
        lengths = []
        for j in queued:
            events = journeys[j]
            first = min(events, key=lambda e: e["timestamp"])
            self.assertEqual(first["function"], "net:net_dev_queue")
            lengths.append(first["len"])
            skbs = {e["packet_id"] for e in events}
            clones = skbs - {first["packet_id"]}
            self.assertEqual(len(clones), 0 if first["len"] == 300 + 42 else 2, events)
            # The clone of the packet sent has its transport header at the network header
            # (dev_queue_xmit_nit puts it there): its ports are read past the IP header.
            self.assertEqual(len({e["tuple"] for e in events}), 1, events)
            for clone in clones:
                # Each clone was read by the packet socket, then freed.
                self.assertEqual([e["function"] for e in events if e["packet_id"] == clone],
                                 ["skb:skb_copy_datagram_iovec", "skb:consume_skb"], events)
        self.assertEqual(sorted(lengths), [142, 143, 144, 342])
        # The per-packet view shows each journey as one packet, its clones by address. Another
        # mark: UDP frees a datagram read on the CPU that made it, later (skb_attempt_defer_free),
        # so the first run's datagrams may be freed as this one starts.
        other = MARK ^ 0x8000
        status, out, err = kq_around(f"trace packet where mark == {other:#x} select len",
                                     command=f"{sys.executable} {SUPPORT}/cloned_udp.py {other:#x} 3")
        self.assertEqual(status, 0, err)
        packets = packet_view(out)
        self.assertEqual([p.span.endswith(", on 3 skbs") for p in packets], [True, True, True, False], out + err)
        self.assertEqual([p.rows[0]["len"] for p in packets], ["142", "143", "144", "342"])

    @unittest.skipIf(shutil.which("ip") is None or shutil.which("nft") is None,
                     "needs ip(8) and nft(8) (scripts/install-deps installs nftables) for namespaces and NAT")
    def test_a_datagram_through_nat_into_another_namespace_is_one_journey(self):
        # Crossing into a namespace scrubs the mark, so `track` follows the datagram on. Each
        # is one journey through three namespaces, with the ARP probe's clones of it (each
        # hop's first datagram waits for its neighbour), its device and namespace at each
        # step, its tuple translated where R sends it to B, and the conntrack state R gave it.
        (a, r, b), (va, ra, rb, vb) = nat_udp.router(os.getpid() % 100000,
                                                     lambda args: self.addCleanup(subprocess.run, args, capture_output=True))
        query = f"trace packet where mark == {MARK:#x} track select ifname, dev_netns_name, tuple, ct_state"
        status, out, err = kq_around("-f", "json", query,
                                     command=f"{sys.executable} {SUPPORT}/nat_udp.py {MARK:#x} {a} {b}")
        self.assertEqual(status, 0, err)
        journeys = netns_udp.groups(json_events(out), "journey")
        self.assertEqual(len(journeys), 2, out)
        forwarded, dropped = journeys

        def steps(events, *keys):
            """The values of `keys` at each event, a run of the same ones once."""
            seen = [tuple(e[k] for k in keys) for e in events]
            return [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]

        sent, translated = "10.77.1.1:40000 -> 10.77.1.254:9999", r"^10\.77\.2\.254:\d+ -> 10\.77\.2\.2:9998$"
        # Once B's socket took the datagram, it has no device: where the reader's timing
        # lets skb:consume_skb see it free it (a run in four here), that step has none.
        delivered = [e for e in forwarded if not (e["dev_netns_name"] == 0 and e["function"] == "skb:consume_skb"
                                                  and e is forwarded[-1])]
        self.assertEqual([s[0] for s in steps(delivered, "dev_netns_name")], [a, r, b], out)
        forwarded = delivered
        self.assertEqual([s[0] for s in steps(forwarded, "ifname")], [va, ra, rb, vb], out)
        self.assertGreater(len({e["packet_id"] for e in forwarded}), 1, "no ARP probe's clone on it")
        for e in forwarded:
            if (e["dev_netns_name"], e["ifname"]) in ((a, va), (r, ra)):
                self.assertEqual((e["tuple"], e["ct_state"]), (sent, "none"), e)
            elif e["ifname"] == rb:
                self.assertRegex(e["tuple"], translated)
                self.assertEqual(e["ct_state"], "NEW", e)
            else:  # in B, whose netfilter tracks nothing
                self.assertEqual((e["dev_netns_name"], e["ifname"], e["ct_state"]), (b, vb, "none"), e)
                self.assertRegex(e["tuple"], translated)
        self.assertIn("net:netif_receive_skb", [e["function"] for e in forwarded if e["ifname"] == vb])
        # The other ends in R's forward chain, tracked as a new connection.
        self.assertEqual([s[0] for s in steps(dropped, "dev_netns_name")], [a, r], out)
        last = dropped[-1]
        self.assertEqual((last["function"], last.get("drop_reason"), last["ct_state"], last["tuple"]),
                         ("skb:kfree_skb", "SKB_DROP_REASON_NETFILTER_DROP", "NEW", "10.77.1.1:40000 -> 10.77.2.2:9997"))

    @unittest.skipIf(shutil.which("ip") is None, "needs ip(8) (scripts/install-deps installs iproute2) for namespaces")
    def test_a_datagram_a_bridge_floods_is_one_journey_with_a_branch(self):
        # tests/support/bridge_udp.py: the bridge in S floods A's datagram to B, the original
        # skb, and to C, a clone, which C drops (a frame for another host). One journey of
        # two skbs: the original from A through S into B, the clone in S, then in C.
        (a, b, c, s), (ha, hb, hc), (pa, pb, pc), _ = bridge_udp.bridge(
            os.getpid() % 100000, lambda args: self.addCleanup(subprocess.run, args, capture_output=True))
        query = f"trace packet where mark == {MARK:#x} track select ifname, dev_netns_name, tuple"
        status, out, err = kq_around("-f", "json", query,
                                     command=f"{sys.executable} {SUPPORT}/bridge_udp.py {MARK:#x} {a} {b}")
        self.assertEqual(status, 0, err)
        events = list(json_events(out))
        self.assertEqual(len(netns_udp.groups(events, "journey")), 1, out)
        skbs = netns_udp.groups(events, "packet_id")
        self.assertEqual(len(skbs), 2, out)
        original, clone = skbs
        self.assertEqual(netns_udp.places(original), [(a, ha), (s, pa), (s, pb), (b, hb)], out)
        self.assertEqual(netns_udp.places(clone), [(s, pc), (c, hc)], out)
        self.assertIn("net:netif_receive_skb", [e["function"] for e in original if e["ifname"] == hb])
        last = clone[-1]
        self.assertEqual((last["function"], last.get("drop_reason"), last["dev_netns_name"]),
                         ("skb:kfree_skb", "SKB_DROP_REASON_OTHERHOST", c), out)
        self.assertTrue(all(e["tuple"] == "10.79.0.1:40001 -> 10.79.0.2:9996" for e in events), out)
        # The text view: one packet on two skbs.
        status, out, err = kq_around("--packet-view", "end", query,
                                     command=f"{sys.executable} {SUPPORT}/bridge_udp.py {MARK:#x} {a} {b}")
        self.assertEqual(status, 0, err)
        self.assertEqual(len(re.findall(r"^packet 0x[0-9a-f]+: \d+ events in .*, on 2 skbs$", out, re.M)), 1, out)

    @unittest.skipIf(shutil.which("ip") is None, "needs ip(8) (scripts/install-deps installs iproute2) for namespaces")
    def test_a_datagram_through_a_vxlan_tunnel_is_one_journey(self):
        # tests/support/vxlan_udp.py: encapsulated in A, decapsulated in B, the datagram is
        # one journey (`track`: the veth scrubs the mark), on A's VXLAN device, then the
        # underlay in both namespaces with the outer tuple and the datagram inside it, then
        # B's VXLAN device with the datagram's own.
        (a, b), (ua, ub), (va, vb) = vxlan_udp.tunnel(
            os.getpid() % 100000, lambda args: self.addCleanup(subprocess.run, args, capture_output=True))
        query = f"trace packet where mark == {MARK:#x} track select ifname, dev_netns_name, tuple, inner_tuple, encapsulated"
        status, out, err = kq_around("-f", "json", query,
                                     command=f"{sys.executable} {SUPPORT}/vxlan_udp.py {MARK:#x} {a} {b}")
        self.assertEqual(status, 0, err)
        journeys = netns_udp.groups(json_events(out), "journey")
        self.assertEqual(len(journeys), 1, out)
        events = journeys[0]
        self.assertEqual([p for p in netns_udp.places(events)], [(a, va), (a, ua), (b, ub), (b, vb)], out)
        datagram = "10.81.0.1:40002 -> 10.81.0.2:9995"
        for e in events:
            if e["ifname"] in (ua, ub):
                self.assertRegex(e["tuple"], r"^10\.80\.0\.1:\d+ -> 10\.80\.0\.2:4789$")
                self.assertEqual((e["encapsulated"], e["inner_tuple"]), (True, datagram), e)
        self.assertEqual([e["tuple"] for e in events if e["function"] == "net:netif_receive_skb" and e["ifname"] == vb],
                         [datagram], out)
        self.assertEqual(events[0]["tuple"], datagram, out)

    @unittest.skipIf(shutil.which("ip") is None, "needs ip(8) (scripts/install-deps installs iproute2) for namespaces")
    def test_a_filter_on_a_namespace_by_name(self):
        # The bridge's clone, on C's device: `dev_netns == "C"` keeps those steps alone (no
        # mark: the veth scrubbed it); `netns == "A"` (the task's) the sender's steps.
        (a, b, c, s), (ha, hb, hc), _, _ = bridge_udp.bridge(
            os.getpid() % 100000, lambda args: self.addCleanup(subprocess.run, args, capture_output=True))
        send = f"{sys.executable} {SUPPORT}/bridge_udp.py {MARK:#x} {a} {b}"
        status, out, err = kq_around("-f", "json", f'trace packet where dev_netns == "{c}" and dport == 9996 '
                                     "select ifname, dev_netns_name", command=send)
        self.assertEqual(status, 0, err)
        events = netns_udp.groups(json_events(out), "journey")
        self.assertEqual(len(events), 1, out)
        self.assertEqual({(e["dev_netns_name"], e["ifname"]) for e in events[0]}, {(c, hc)}, out)
        self.assertEqual(events[0][-1].get("drop_reason"), "SKB_DROP_REASON_OTHERHOST", out)
        status, out, err = kq_around("-f", "json", f'trace packet where netns == "{a}" and mark == {MARK:#x} '
                                     "select ifname, dev_netns_name", command=send)
        self.assertEqual(status, 0, err)
        self.assertEqual([(e["dev_netns_name"], e["ifname"]) for e in json_events(out)][:1], [(a, ha)], out)
        # A name `ip netns` does not give is an error, before anything loads.
        status, out, err = kq_around(f'trace packet where netns == "{a}x"', command="true")
        self.assertEqual(status, 1, err)
        self.assertIn(f'`netns` is never `"{a}x"`: `ip netns` names no such namespace', err)

    @unittest.skipIf(not all(shutil.which(t) for t in ("ip", "tc", "clang")),
                     "needs ip(8), tc(8) and clang (scripts/install-deps installs them) for the XDP and TC programs")
    def test_xdp_and_tc_programs_fexit_cannot_reach_leave_the_journeys_whole(self):
        # tests/support/xdp_udp.py's XDP and TC programs on B's device drop two of three
        # marked datagrams. Where the kernel refuses fexit (this one), packet mode goes on
        # without the programs, says why on its ready line, and each datagram is still one
        # journey, ending where it was dropped: XDP's drop freed with no reason, TC's with
        # SKB_DROP_REASON_TC_INGRESS. Where fexit works (tests/vm), the programs are steps.
        obj = xdp_udp.build(WORKDIR)
        (a, b), (_, vb) = xdp_udp.pair(os.getpid() % 100000, obj=obj,
                                       cleanup=lambda args: self.addCleanup(subprocess.run, args, capture_output=True))
        query = f"trace packet where mark == {MARK:#x} track select ifname, tuple"
        status, out, err = kq_around("-f", "json", query, command=f"{sys.executable} {SUPPORT}/xdp_udp.py {MARK:#x} {a} {b}")
        self.assertEqual(status, 0, err)
        traced = re.search(r"^kq: packet: ready, .*, and 2 XDP/TC programs through fexit", err, re.M)
        if not traced:
            self.assertRegex(err, r"(?m)^kq: packet: ready, [\d,]+ tracepoints through tp_btf; the XDP and TC "
                                  r"programs loaded are not traced \(fexit: .+\)$")
        journeys = {}
        for e in sorted(json_events(out), key=lambda e: e["timestamp"]):
            journeys.setdefault(e["journey"], []).append(e)
        ends = {}
        for events in journeys.values():
            [port] = {e["tuple"].rsplit(":", 1)[1] for e in events}
            ends[port] = events
        self.assertEqual(sorted(ends), ["9996", "9997", "9998"], out)
        self.assertEqual(any("verdict" in e for e in json_events(out)), bool(traced), out)
        last = {port: (events[-1]["function"], events[-1].get("drop_reason")) for port, events in ends.items()}
        self.assertEqual(last["9997"], ("skb:kfree_skb", "SKB_DROP_REASON_NOT_SPECIFIED"), ends["9997"])
        self.assertEqual(last["9996"], ("skb:kfree_skb", "SKB_DROP_REASON_TC_INGRESS"), ends["9996"])
        self.assertTrue(all(e["ifname"] == vb for e in ends["9997"][-2:]), ends["9997"])

    def test_losses_are_counted_where_they_happened(self):
        # A burst of 2,000 marked datagrams into the smallest ring buffer: most of their
        # records are lost, and each loss is counted at its site, in JSON and in text.
        burst = (f"{sys.executable} -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                 f"s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, {MARK:#x}); "
                 f"[s.sendto(b'x' * 20, ('127.0.0.1', {CLOSED_PORT})) for _ in range(2000)]\"")
        query = f"trace packet where mark == {MARK:#x} select len"
        status, out, err = kq_around("--buffer-size", "4k", "-f", "json", query, command=burst)
        self.assertEqual(status, 0, err)
        [summary] = [json.loads(l)["summary"] for l in err.splitlines() if l.startswith('{"summary"')]
        self.assertGreater(summary["lost"], 0, summary)
        self.assertEqual(sum(summary["lost_at"].values()), summary["lost"], summary)
        sites = {e["function"] for e in json_events(out)}
        self.assertTrue(set(summary["lost_at"]) <= sites | {"net:net_dev_start_xmit", "net:netif_rx_entry",
                                                            "net:netif_rx", "net:net_dev_xmit", "icmp:icmp_send"},
                        summary)
        self.assertIn("skb:kfree_skb", summary["lost_at"])
        status, _, err = kq_around("--buffer-size", "4k", "--packet-view", "live", query, command=burst)
        self.assertEqual(status, 0, err)
        lost = int(re.search(r"^kq: \d+ events, (\d+) lost", err, re.M)[1])
        at = re.search(r"^kq: lost at: (.*)$", err, re.M)
        self.assertTrue(at, err)
        counts = [int(part.rsplit(" ", 1)[1]) for part in at[1].split(", ") if not part.startswith("and ")]
        self.assertEqual(counts, sorted(counts, reverse=True), at[1])
        self.assertLessEqual(sum(counts), lost)

    def test_track_follows_a_packet_after_the_filter_stops_holding(self):
        # `len` at net_dev_queue counts the Ethernet header; once `lo` received the frame
        # it does not: 333 bytes of payload are 375 bytes there, 361 afterwards.
        length = 333 + UDP4
        query = f"trace packet where mark == {MARK:#x} and len == {length} select len"
        command = closed_port_command(333, 200)
        status, out, err = kq_around(query, command=command)
        self.assertEqual(status, 0, err)
        [untracked] = packet_view(out)
        self.assertEqual({r["len"] for r in untracked.rows}, {str(length)})
        self.assertEqual(untracked.rows[0]["FUNCTION"], "net:net_dev_queue")
        status, out, err = kq_around(query + " track", command=command)
        self.assertEqual(status, 0, err)
        [tracked] = packet_view(out)
        self.assertGreater(len(tracked.rows), len(untracked.rows))
        self.assertEqual([r["len"] for r in tracked.rows if r["FUNCTION"] == "net:netif_receive_skb"],
                         [str(length - 14)])
        self.assertEqual((tracked.rows[-1]["FUNCTION"], tracked.rows[-1].get("drop")),
                         ("skb:kfree_skb", f"drop: {NO_SOCKET}"))

    def test_group_by_func_counts_per_tracepoint(self):
        query = f"trace packet where mark == {MARK:#x}"
        status, out, err = kq_around("-f", "json", query + " group by func select count()",
                                     command=closed_port_command())
        self.assertEqual(status, 0, err)
        [table] = [line for line in map(json.loads, out.splitlines()) if "rows" in line]
        counts = {row["func"]: row["count()"] for row in table["rows"]}
        status, out, err = kq_around("-f", "json", query, command=closed_port_command())
        self.assertEqual(status, 0, err)
        # As many as the events of the same datagrams, but for ICMP's replies: the kernel
        # may rate-limit those (icmp_msgs_per_sec is for the whole machine).
        events = Counter(e["function"] for e in json_events(out))
        self.assertEqual({f: n for f, n in counts.items() if f != "icmp:icmp_send"},
                         {f: n for f, n in events.items() if f != "icmp:icmp_send"})
        self.assertLessEqual(counts.get("icmp:icmp_send", 0), len(SIZES))
        self.assertEqual((counts["net:net_dev_queue"], counts["skb:kfree_skb"]), (6, 6))

    def test_attach_fentry_is_refused(self):
        status, out, err = kq("--attach", "fentry", f"trace packet where mark == {MARK:#x}", "-c", "true")
        self.assertEqual((status, out), (1, ""), err)
        self.assertIn("fentry: packet mode has no fentry method", err)
        self.assertIn("tp_btf: not tried (--attach fentry", err)

    def test_attach_kprobe_does_not_fall_back_to_tracepoints(self):
        status, out, err = kq("--attach", "kprobe", f"trace packet where mark == {MARK:#x}", "-c", "true")
        self.assertEqual((status, out), (1, ""), err)
        self.assertIn("kprobe: this kernel has no kprobe support", err)
        self.assertIn("tp_btf: not tried (--attach kprobe", err)

    def test_graph_is_checked_but_needs_kprobes_here(self):
        query = f"trace packet graph where mark == {MARK:#x}"
        status, out, err = kq("check", query)
        self.assertEqual(status, 0, err)
        status, out, err = kq(query, "-c", "true")
        self.assertEqual((status, out), (1, ""), err)
        self.assertIn("cannot attach to packet", err)
        self.assertIn("kprobe: this kernel has no kprobe support", err)
        self.assertIn("`graph` needs each function's return, which tracepoints do not have", err)


if __name__ == "__main__":
    harness.main(sys.argv)
