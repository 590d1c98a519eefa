"""The examples of TCP: connections opened, accepted, ended, retransmitted, dropped."""
import shutil
import subprocess
import time

from examples_support import PYTHON, ExampleTestCase, bpftrace_rows, facts, traced, workload


class NetworkExamples(ExampleTestCase):
    """tcpconnect, tcpaccept, tcplife, tcpretrans, tcpdrop."""

    def connections(self, comm):
        """A workload that connects twice to a listener on loopback, accepts both, then once
        more after the listener closed (refused); and connects a UDP socket, which is no TCP
        connection. Reports the ports."""
        return workload(comm, """
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
port = listener.getsockname()[1]
first = socket.create_connection(("127.0.0.1", port))
second = socket.create_connection(("127.0.0.1", port))
accepted = [listener.accept()[0] for _ in range(2)]
listener.close()
refused = socket.socket()
try:
    refused.connect(("127.0.0.1", port))
except ConnectionRefusedError:
    pass
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).connect(("127.0.0.1", 9))
report(server=port, clients=[first.getsockname()[1], second.getsockname()[1], refused.getsockname()[1]])
""")

    def test_tcpconnect(self):
        path = self.connections("kqex-tcpconnect")
        bt = self.bpftrace("tcpconnect")
        events = traced("tcpconnect", path)
        f = facts(path)
        server = f"[::ffff:127.0.0.1]:{f['server']}"
        mine = [(e["saddr_sport"], e["daddr_dport"], e["result"]) for e in events if e["comm"] == "kqex-tcpconnect"]
        self.assertEqual(mine, [(f"[::ffff:127.0.0.1]:{f['clients'][0]}", server, 0),
                                (f"[::ffff:127.0.0.1]:{f['clients'][1]}", server, 0),
                                (f"[::ffff:127.0.0.1]:{f['clients'][2]}", server, -111)])  # ECONNREFUSED

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-tcpconnect\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)$")
            self.assertEqual([(int(sport), int(dport)) for _, sport, _, dport in rows],
                             [(client, f["server"]) for client in f["clients"]], output[-3000:])
        self.compare(bt, check)

    def test_tcpaccept(self):
        path = self.connections("kqex-tcpaccept")
        bt = self.bpftrace("tcpaccept")
        events = traced("tcpaccept", path)
        f = facts(path)
        server = f"[::ffff:127.0.0.1]:{f['server']}"
        mine = [(e["raddr_rport"], e["laddr_lport"], e["backlog"]) for e in events if e["comm"] == "kqex-tcpaccept"]
        # The first accept leaves the second connection waiting; the second leaves none.
        self.assertEqual(mine, [(f"[::ffff:127.0.0.1]:{f['clients'][0]}", server, "1/8"),
                                (f"[::ffff:127.0.0.1]:{f['clients'][1]}", server, "0/8")])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-tcpaccept\s+\S+\s+(\d+)\s+\S+\s+(\d+)\s+\S+$")
            self.assertEqual([tuple(map(int, r)) for r in rows],
                             [(client, f["server"]) for client in f["clients"][:2]], output[-3000:])
        self.compare(bt, check)

    def test_tcplife(self):
        path = workload("kqex-tcplife", """
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
client = socket.create_connection(listener.getsockname())
server, _ = listener.accept()
report(pid=os.getpid(), server=listener.getsockname()[1], client=client.getsockname()[1])
def transfer(sender, receiver, size):
    sender.sendall(b"x" * size)
    got = 0
    while got < size:
        got += len(receiver.recv(65536))
transfer(client, server, 10240)
transfer(server, client, 20480)
time.sleep(0.2)
client.close()
time.sleep(0.05)
server.close()
""")
        bt = self.bpftrace("tcplife")
        kq = self.kq_session("tcplife")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)
        f = facts(path)
        client, server = f"[::ffff:127.0.0.1]:{f['client']}", f"[::ffff:127.0.0.1]:{f['server']}"
        mine = [e for e in kq.events() if e["owner_comm"] == "kqex-tcplife"]
        # The client sent 10 KiB and received 20, the server the other way round; both
        # lived over 200 ms.
        self.assertEqual(sorted((e["laddr_lport"], e["raddr_rport"], e["tx_kb"], e["rx_kb"], e["owner_pid"])
                                for e in mine),
                         sorted([(client, server, 10, 20, f["pid"]), (server, client, 20, 10, f["pid"])]))
        self.assertTrue(all(200 <= e["ms"] < 10000 for e in mine), mine)

        def check(output):
            # PID COMM LADDR LPORT RADDR RPORT TX_KB RX_KB MS
            rows = bpftrace_rows(output, r"(\d+)\s+kqex-tcplife\s+\S+\s+(\d+)\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+$")
            expected = [(f["pid"], f["client"], f["server"], 10, 20), (f["pid"], f["server"], f["client"], 20, 10)]
            self.assertEqual(sorted(tuple(map(int, r)) for r in rows), sorted(expected), output[-3000:])
        self.compare(bt, check)

    def test_tcplife_a_connection_reset_by_its_server(self):
        # The accepted side is reset (SO_LINGER 0): never in SYN_SENT, FIN_WAIT1 or LAST_ACK,
        # it is owned by the task that frees it (the optional owner join found nothing).
        path = workload("kqex-tcpreset", """
import struct
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
client = socket.create_connection(listener.getsockname())
server, _ = listener.accept()
report(pid=os.getpid(), server=listener.getsockname()[1], client=client.getsockname()[1])
server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
server.close()
time.sleep(0.1)
try:
    client.recv(10)
except ConnectionResetError:
    pass
client.close()
""")
        events = traced("tcplife", path)
        f = facts(path)
        ports = sorted(int(e["laddr_lport"].rsplit(":", 1)[1]) for e in events if e["owner_pid"] == f["pid"])
        self.assertEqual(ports, sorted([f["server"], f["client"]]), events)
        self.assertEqual({e["owner_comm"] for e in events if e["owner_pid"] == f["pid"]}, {"kqex-tcpreset"}, events)

    def syn_dropped(self):
        """A connect in a network namespace of its own, whose loopback drops every packet (a
        token bucket smaller than a packet): it sends its SYN (dropped), retransmits it after
        a second (dropped too: a local drop is retried every 0.5 s) and gives up at 1.4 s,
        before the next retry (a retransmission late by up to 0.4 s under load still counts).
        Returns the connection's local port."""
        for tool in ["unshare", "ip", "tc"]:
            if shutil.which(tool) is None:
                self.skipTest(f"`{tool}` is not installed; the workload drops packets in a network namespace")
        path = workload("kqex-tcpdrop", """
subprocess.run("ip link set lo up && tc qdisc add dev lo root tbf rate 1kbit burst 10 limit 1",
               shell=True, check=True)
listener = socket.socket()
listener.bind(("127.0.0.1", 4242))
listener.listen()
client = socket.socket()
client.settimeout(1.4)
try:
    client.connect(("127.0.0.1", 4242))
except socket.timeout:
    pass
report(port=client.getsockname()[1])
""")
        subprocess.run(["unshare", "-n", PYTHON, path], check=True, timeout=30)
        time.sleep(0.2)
        return facts(path)["port"]

    def test_tcpretrans(self):
        bt = self.bpftrace("tcpretrans")
        kq = self.kq_session("tcpretrans")
        port = self.syn_dropped()
        events = [e for e in kq.events() if e["raddr_rport"] == "[::ffff:127.0.0.1]:4242"]
        # Once, at one second (a second retry, 0.5 s later, only if the workload was late).
        self.assertIn(len(events), [1, 2], events)
        self.assertEqual({(e["laddr_lport"], e["state"]) for e in events},
                         {(f"[::ffff:127.0.0.1]:{port}", "TCP_SYN_SENT")}, events)

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+(\S+):(\d+)\s+(\S+):4242\s+(\S+)$")
            self.assertEqual(rows, [("127.0.0.1", str(port), "127.0.0.1", "SYN_SENT")] * len(events), output[-3000:])
        self.compare(bt, check)

    def test_tcpdrop(self):
        bt = self.bpftrace("tcpdrop")
        kq = self.kq_session("tcpdrop")
        port = self.syn_dropped()
        events = [e for e in kq.events() if e["daddr_dport"] == "[::ffff:127.0.0.1]:4242"]
        # The SYN, dropped as connect() sent it, then its retransmission from the timer (and
        # a second retry, 0.5 s later, only if the workload was late).
        self.assertIn(len(events), [2, 3], events)
        self.assertEqual({(e["saddr_sport"], e["state"], e["reason"]) for e in events},
                         {(f"[::ffff:127.0.0.1]:{port}", "TCP_SYN_SENT", "SKB_DROP_REASON_QDISC_DROP")}, events)
        self.assertEqual(events[0]["comm"], "kqex-tcpdrop")
        self.assertIn("tcp_connect", " ".join(events[0]["kstack"]))
        self.assertTrue(all("tcp_retransmit_skb" in " ".join(e["kstack"]) for e in events[1:]), events)

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+\S+\s+(\S+):(\d+)\s+(\S+):4242\s+(\S+)\s*$")
            self.assertEqual(rows, [("127.0.0.1", str(port), "127.0.0.1", "SYN_SENT")] * len(events), output[-3000:])
        self.compare(bt, check)
