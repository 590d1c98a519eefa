#!/usr/bin/env python3
"""The examples (examples/*.kq), each run against a workload whose answer is known: the test
asserts on the values kq printed (counts, names, sizes). Where bpftrace can run its own tool
(/usr/sbin/NAME.bt) here, it runs beside kq on the same workload and the two must agree on
the workload's values (never on timestamps). Needs root and a kernel with BTF: without them
every test is skipped, saying why; without bpftrace only the comparisons are.

Usage: examples_test.py PATH_TO_KQ [unittest arguments]
"""
import ctypes
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import harness

EXAMPLES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
# On the root file system (the machine's disk), so that O_DIRECT writes reach a block device.
WORKDIR = tempfile.mkdtemp(prefix="kq-examples-", dir="/var/tmp")
PYTHON = sys.executable
BPFTRACE = shutil.which("bpftrace")
SYSCALLS = {"x86_64": {"getppid": 110, "newstat": 4, "newlstat": 6, "statfs": 137, "newfstatat": 262,
                       "statx": 332, "nanosleep": 35, "clock_nanosleep": 230, "setuid": 105,
                       "setfsuid": 122, "setresuid": 117}}.get(platform.machine())


def skip_reason():
    if harness.skip_reason():
        return harness.skip_reason()
    if SYSCALLS is None:
        return f"the workloads make raw system calls by their x86-64 numbers, not {platform.machine()}'s"
    return None


def example(name):
    return os.path.join(EXAMPLES, name + ".kq")


def workload(comm, body):
    """A Python program that names itself `comm` (PR_SET_NAME), so that its events are told
    apart from everything else the machine does, then runs `body`. `report(**facts)` saves
    what only the workload knows (a child's pid, a port) for the test, read by `facts()`."""
    path = os.path.join(WORKDIR, comm + ".py")
    with open(path, "w") as f:
        f.write(f"""import ctypes, json, os, socket, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl(15, {comm.encode()!r}, 0, 0, 0)
WORKDIR = {WORKDIR!r}
SYS = {SYSCALLS!r}
def report(**facts):
    with open({path + ".json"!r}, "w") as f:
        json.dump(facts, f)
""")
        f.write(body)
    return path


def facts(workload_path):
    with open(workload_path + ".json") as f:
        return json.load(f)


def run_kq(name, *args, timeout=60):
    """Runs example `name` with -o json to its end: the JSON objects it printed. A command
    (-c) that failed fails the test: kq says how it ended."""
    proc = subprocess.run([harness.KQ, "-o", "json", example(name), *args], capture_output=True, timeout=timeout)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0 or "kq: the command" in err:
        raise AssertionError(f"kq {name} exited with {proc.returncode}:\n{err}\n{out[:3000]}")
    return [json.loads(line) for line in out.splitlines()]


def traced(name, path):
    """Runs example `name` on the workload at `path` with -c: only the workload is traced."""
    return run_kq(name, "-c", f"exec {PYTHON} {path}")


class Background:
    """A tracer running while a workload runs: started, ready once `ready(line)` is true for a
    line of `stream`, stopped with SIGINT."""

    def __init__(self, argv, ready, stream="stdout"):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     errors="replace")
        self.lines = {"stdout": [], "stderr": []}
        self.ready = threading.Event()
        self.readers = [threading.Thread(target=self._read, args=(name, ready if name == stream else None),
                                         daemon=True) for name in self.lines]
        for r in self.readers:
            r.start()

    def _read(self, name, ready):
        for line in getattr(self.proc, name):
            self.lines[name].append(line)
            if ready and ready(line):
                self.ready.set()
        if ready:
            self.proc.wait()
            self.ready.set()  # it ended: whoever waits sees that it exited

    def wait_ready(self, timeout=60):
        """Whether it became ready (and is still running)."""
        return self.ready.wait(timeout) and self.proc.poll() is None

    def stop(self):
        """SIGINT, then what it printed: (stdout, stderr). Stopping again changes nothing."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.lines["stderr"].append("(killed: still running 60 s after SIGINT)\n")
        for r in self.readers:
            r.join(timeout=10)
        for stream in [self.proc.stdout, self.proc.stderr]:
            stream.close()
        return "".join(self.lines["stdout"]), "".join(self.lines["stderr"])


class KqSession(Background):
    """An example running system-wide (for events that happen outside the workload's
    processes, such as in timers); ready once -v has said how each probe attached."""

    def __init__(self, name, *args):
        super().__init__([harness.KQ, "-v", "-o", "json", example(name), *args],
                         lambda line: re.match(r"kq: .+: \S+$", line) is not None, stream="stderr")
        self.name = name
        if not self.wait_ready():
            out, err = self.stop()
            raise AssertionError(f"kq {name} did not start:\n{err}\n{out[:2000]}")

    def events(self):
        out, err = self.stop()
        if self.proc.returncode != 0:
            raise AssertionError(f"kq {self.name} exited with {self.proc.returncode}:\n{err}")
        return [json.loads(line) for line in out.splitlines()]


class Bpftrace(Background):
    """bpftrace's own tool, started before kq so that both see the whole workload. `reason`
    says why it cannot run here (then there is nothing to compare)."""

    def __init__(self, tool):
        self.tool = tool
        self.reason = None
        script = f"/usr/sbin/{tool}.bt"
        if BPFTRACE is None:
            self.reason = "bpftrace is not installed: nothing to compare with"
            return
        if not os.path.exists(script):
            self.reason = f"bpftrace's {script} is not installed: nothing to compare with"
            return
        # bpftrace prints `Attaching N probes...`, then, once all are attached, what BEGIN prints.
        seen = []
        super().__init__([BPFTRACE, script], lambda line: seen.append(line) or len(seen) >= 2)
        ready = self.wait_ready()
        time.sleep(0.1)  # what it said on stderr while it attached
        skipped = [l for l in self.lines["stderr"] if "could not attach probe" in l]
        if ready and skipped:
            self.stop()
            self.reason = f"bpftrace runs {script} here without its probes: {skipped[0].strip()}"
        elif not ready:
            out, err = self.stop()
            # Its first complaint but the one it always makes (RLIMIT_MEMLOCK, harmless).
            lines = [l for l in err.splitlines() if l.strip() and "RLIMIT_MEMLOCK" not in l]
            errors = [l for l in lines if "ERROR" in l or "error" in l] or lines
            error = errors[0] if errors else f"it exited with {self.proc.returncode}"
            self.reason = f"bpftrace cannot run {script} here: {error}"


def bpftrace_rows(output, pattern):
    """The lines of bpftrace's output that match `pattern`, as tuples of its groups."""
    return [m.groups() for m in (re.match(pattern, line) for line in output.splitlines()) if m]


def bpftrace_histograms(output):
    """bpftrace's printed histograms: {key: {lower bound: count}} for non-empty buckets."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    hists, key = {}, None
    for line in output.splitlines():
        m = re.match(r"@\[(.*)\]:\s*$", line)
        if m:
            key = m.group(1)
            hists[key] = {}
            continue
        m = re.match(r"\[(\d+)([KMG]?), .*\)\s+(\d+) \|", line)
        if m and key is not None and int(m.group(3)):
            hists[key][int(m.group(1)) * units[m.group(2)]] = int(m.group(3))
    return hists


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Examples(harness.KqTestCase):
    def bpftrace(self, tool):
        """bpftrace's `tool`, stopped when the test ends, however it ends."""
        bt = Bpftrace(tool)
        if not bt.reason:
            self.addCleanup(bt.stop)
        return bt

    def kq_session(self, name, *args):
        session = KqSession(name, *args)
        self.addCleanup(session.stop)
        return session

    def not_comparable(self, tool, why):
        """Skips the comparison with bpftrace's `tool`, saying why: it cannot run here, or what
        it prints has no value of the workload's alone."""
        with self.subTest(compare=f"bpftrace {tool}.bt"):
            bt = Bpftrace(tool)
            if bt.reason:
                self.skipTest(bt.reason)
            bt.stop()
            self.skipTest(f"{tool}.bt runs here, but {why}: nothing of the workload's alone to compare")

    def compare(self, bpftrace, check):
        """`check(output)` on what bpftrace's tool printed; skipped, with the reason printed,
        when bpftrace cannot run it here."""
        with self.subTest(compare=f"bpftrace {bpftrace.tool}.bt"):
            if bpftrace.reason:
                self.skipTest(bpftrace.reason)
            out, err = bpftrace.stop()
            try:
                check(out)
            except AssertionError as e:
                raise AssertionError(f"{e}\nbpftrace exited with {bpftrace.proc.returncode}: {err[-1000:]}") from None

    def test_every_example_of_a_bpftrace_tool_is_tested(self):
        # Here, or (kernel functions) in the VM tier.
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm", "vm_test.py")) as f:
            vm_tests = f.read()
        for name in sorted(os.listdir(EXAMPLES)):
            with open(os.path.join(EXAMPLES, name)) as f:
                if not name.endswith(".kq") or f"bpftrace's {name[:-3]}.bt" not in f.read():
                    continue
            tool = name[:-3]
            self.assertTrue(hasattr(self, f"test_{tool}") or f"def test_{tool}(" in vm_tests,
                            f"examples/{name} has no test_{tool}")

    def test_syscount(self):
        calls = 50000
        path = workload("kqex-syscount", f"for _ in range({calls}): os.getppid()\n")
        bt = self.bpftrace("syscount")
        by_id, by_comm = traced("syscount", path)
        syscalls = {r["syscall"]: r["count"] for r in by_id["rows"]}
        processes = {r["process"]: r["count"] for r in by_comm["rows"]}
        # Python itself asks for its parent once or twice as it starts.
        self.assertIn(syscalls.get(SYSCALLS["getppid"], 0) - calls, range(0, 3), by_id)
        self.assertGreater(processes.get("kqex-syscount", 0), calls, by_comm)

        def check(output):
            # Every system call the workload made after naming itself, counted by both.
            counts = dict(bpftrace_rows(output, r"@process\[(.*)\]: (\d+)$"))
            self.assertEqual(int(counts.get("kqex-syscount", -1)), processes["kqex-syscount"], output)
            by_number = dict(bpftrace_rows(output, r"@syscall\[(\d+)\]: (\d+)$"))
            self.assertGreaterEqual(int(by_number.get(str(SYSCALLS["getppid"]), 0)), calls, output)
        self.compare(bt, check)

    def test_opensnoop(self):
        present, missing = os.path.join(WORKDIR, "present"), os.path.join(WORKDIR, "missing")
        open(present, "w").close()
        path = workload("kqex-opensnoop", f"""
fd = os.open({present!r}, os.O_RDONLY)
try:
    os.open({missing!r}, os.O_RDONLY)
except FileNotFoundError:
    pass
report(fd=fd, pid=os.getpid())
""")
        bt = self.bpftrace("opensnoop")
        events = traced("opensnoop", path)
        fd, pid = facts(path)["fd"], facts(path)["pid"]
        mine = [(e["pid"], e["fd"], e["err"], e["path"]) for e in events if e["path"] in (present, missing)]
        self.assertEqual(mine, [(pid, fd, 0, present), (pid, -1, 2, missing)])

        def check(output):
            rows = bpftrace_rows(output, r"(\d+)\s+kqex-opensnoop\s+(-?\d+)\s+(\d+)\s+(.*)$")
            rows = [(int(p), int(f), int(e), n) for p, f, e, n in rows if n in (present, missing)]
            self.assertEqual(rows, mine, output[-3000:])
        self.compare(bt, check)

    def test_statsnoop(self):
        present, missing = os.path.join(WORKDIR, "present"), os.path.join(WORKDIR, "missing")
        open(present, "w").close()
        path = workload("kqex-statsnoop", f"""
buf = ctypes.create_string_buffer(4096)
AT_FDCWD = -100
for name in [{present!r}, {missing!r}]:
    p = name.encode()
    libc.syscall(SYS["newstat"], p, buf)
    libc.syscall(SYS["newlstat"], p, buf)
    libc.syscall(SYS["statfs"], p, buf)
    libc.syscall(SYS["newfstatat"], AT_FDCWD, p, buf, 0)
    libc.syscall(SYS["statx"], AT_FDCWD, p, 0, 0xfff, buf)
fd = os.open({present!r}, os.O_RDONLY)
os.fstat(fd)  # an empty path: left out
""")
        bt = self.bpftrace("statsnoop")
        events = traced("statsnoop", path)
        mine = [(e["probe"], e["err"], e["path"]) for e in events if e["comm"] == "kqex-statsnoop"]
        calls = ["newstat", "newlstat", "statfs", "newfstatat", "statx"]
        self.assertEqual(mine, [(f"syscall:{c}", err, p) for err, p in [(0, present), (2, missing)] for c in calls])

        def check(output):
            # bpftrace's tool has no newfstatat.
            rows = bpftrace_rows(output, r"\d+\s+kqex-statsnoop\s+(\d+)\s+(.*)$")
            self.assertEqual([(int(e), p) for e, p in rows],
                             [(e, p) for probe, e, p in mine if probe != "syscall:newfstatat"], output[-3000:])
        self.compare(bt, check)

    def test_syncsnoop(self):
        target = os.path.join(WORKDIR, "synced")
        path = workload("kqex-syncsnoop", f"""
import mmap
fd = os.open({target!r}, os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 4096)
os.sync()
libc.syncfs(fd)
os.fsync(fd)
os.fdatasync(fd)
libc.sync_file_range(fd, ctypes.c_long(0), ctypes.c_long(0), 0)
m = mmap.mmap(fd, 4096)
m.flush()
""")
        bt = self.bpftrace("syncsnoop")
        events = traced("syncsnoop", path)
        calls = ["sync", "syncfs", "fsync", "fdatasync", "sync_file_range", "msync"]
        self.assertEqual([e["probe"] for e in events if e["comm"] == "kqex-syncsnoop"],
                         [f"syscall:{c}" for c in calls])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-syncsnoop\s+tracepoint:syscalls:sys_enter_(\S+)$")
            self.assertEqual([r[0] for r in rows], calls, output[-3000:])
        self.compare(bt, check)

    def test_killsnoop(self):
        path = workload("kqex-killsnoop", """
child = subprocess.Popen(["sleep", "10"])
os.kill(child.pid, 15)
child.wait()
try:
    os.kill(2**31 - 1, 10)
except ProcessLookupError:
    pass
report(child=child.pid)
""")
        bt = self.bpftrace("killsnoop")
        events = traced("killsnoop", path)
        child = facts(path)["child"]
        mine = [(e["sig"], e["tpid"], e["result"]) for e in events if e["comm"] == "kqex-killsnoop"]
        # SIGTERM to the child, delivered; SIGUSR1 to no process: ESRCH.
        self.assertEqual(mine, [("SIGTERM", child, "0"), ("SIGUSR1", 2**31 - 1, "-ESRCH")])

        def check(output):
            # bpftrace prints numbers: 15 and 10, 0 and -3.
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-killsnoop\s+(\d+)\s+(\d+)\s+(-?\d+)$")
            self.assertEqual([tuple(map(int, r)) for r in rows], [(15, child, 0), (10, 2**31 - 1, -3)],
                             output[-3000:])
        self.compare(bt, check)

    def test_naptime(self):
        path = workload("kqex-naptime", """
class timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]
libc.syscall(SYS["nanosleep"], ctypes.byref(timespec(0, 123000000)), None)
libc.syscall(SYS["clock_nanosleep"], 1, 0, ctypes.byref(timespec(1, 45000000)), None)
with open(f"/proc/{os.getppid()}/comm") as f:
    report(ppid=os.getppid(), pcomm=f.read().strip())
""")
        bt = self.bpftrace("naptime")
        events = traced("naptime", path)
        ppid, pcomm = facts(path)["ppid"], facts(path)["pcomm"]
        mine = [(e["probe"], e["ppid"], e["pcomm"], e["seconds"]) for e in events if e["comm"] == "kqex-naptime"]
        self.assertEqual(mine, [("syscall:nanosleep", ppid, pcomm, "0.123"),
                                ("syscall:clock_nanosleep", ppid, pcomm, "1.045")])

        def check(output):
            # bpftrace's tool sees only nanosleep.
            rows = bpftrace_rows(output, r"\S+\s+(\d+)\s+(\S+)\s+\d+\s+kqex-naptime\s+(\S+)$")
            self.assertEqual(rows, [(str(ppid), pcomm, "0.123")], output[-3000:])
        self.compare(bt, check)

    def test_bitesize(self):
        target = os.path.join(WORKDIR, "direct")
        with open(target, "wb") as f:
            f.write(b"y" * (1 << 20))
            os.fsync(f.fileno())
        # O_DIRECT writes to blocks the file already has: one request each, of the write's size.
        path = workload("kqex-bitesize", f"""
import mmap
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"x" * (1 << 20))
fd = os.open({target!r}, os.O_RDWR | os.O_DIRECT)
for i in range(8):
    os.pwrite(fd, memoryview(buf)[:4096], i * 4096)
for i in range(3):
    os.pwrite(fd, memoryview(buf)[:65536], 65536 * (i + 1))
os.close(fd)
""")
        bt = self.bpftrace("bitesize")
        (table,) = traced("bitesize", path)
        rows = {r["comm"]: {b["lo"]: b["count"] for b in r["bytes"] if b["count"]} for r in table["rows"]}
        self.assertEqual(rows.get("kqex-bitesize"), {4096: 8, 65536: 3}, table)

        def check(output):
            self.assertEqual(bpftrace_histograms(output).get("kqex-bitesize"), rows["kqex-bitesize"], output)
        self.compare(bt, check)

    def test_pidpersec(self):
        path = workload("kqex-pidpersec", """
children = []
for _ in range(25):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
""")
        tables = traced("pidpersec", path)
        self.assertEqual(sum(r["pids"] for t in tables for r in t["rows"]), 25, tables)
        self.not_comparable("pidpersec", "it counts every process the machine creates")

    def test_setuids(self):
        path = workload("kqex-setuids", """
libc.syscall(SYS["setfsuid"], 1234)
libc.syscall(SYS["setresuid"], -1, 1001, -1)
libc.syscall(SYS["setuid"], 1002)  # by euid 1001, without CAP_SETUID: EPERM
libc.syscall(SYS["setuid"], 0)     # back to the real uid
""")
        bt = self.bpftrace("setuids")
        events = traced("setuids", path)
        mine = [(e["probe"], e["uid"], e["args"]) for e in events if e["comm"] == "kqex-setuids"]
        self.assertEqual(mine, [("syscall:setfsuid", 0, "uid=1234 (prevuid=0)"),
                                ("syscall:setresuid", 0, "ruid=-1 euid=1001 suid=-1 (0)"),
                                ("syscall:setuid", 0, "uid=1002 (-1)"),
                                ("syscall:setuid", 0, "uid=0 (0)")])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-setuids\s+(\d+)\s+(\S+)\s+(.*)$")
            self.assertEqual([(f"syscall:{s}", int(u), a) for u, s, a in rows], mine, output[-3000:])
        self.compare(bt, check)

    def syn_dropped(self):
        """A connect in a network namespace of its own, whose loopback drops every packet (a
        token bucket smaller than a packet): it sends its SYN (dropped), retransmits it after
        a second (dropped too: a local drop is retried every 0.5 s) and gives up at 1.25 s,
        before the next retry. Returns the connection's local port."""
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
client.settimeout(1.25)
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
        events = [e for e in kq.events() if e["raddr_rport"] == "::ffff:127.0.0.1:4242"]
        # Once, at one second (a second retry, 0.5 s later, only if the workload was late).
        self.assertIn(len(events), [1, 2], events)
        self.assertEqual({(e["laddr_lport"], e["state"]) for e in events},
                         {(f"::ffff:127.0.0.1:{port}", "TCP_SYN_SENT")}, events)

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+(\S+):(\d+)\s+(\S+):4242\s+(\S+)$")
            self.assertEqual(rows, [("127.0.0.1", str(port), "127.0.0.1", "SYN_SENT")] * len(events), output[-3000:])
        self.compare(bt, check)

    def test_tcpdrop(self):
        bt = self.bpftrace("tcpdrop")
        kq = self.kq_session("tcpdrop")
        port = self.syn_dropped()
        events = [e for e in kq.events() if e["daddr_dport"] == "::ffff:127.0.0.1:4242"]
        # The SYN, dropped as connect() sent it, then its retransmission from the timer (and
        # a second retry, 0.5 s later, only if the workload was late).
        self.assertIn(len(events), [2, 3], events)
        self.assertEqual({(e["saddr_sport"], e["state"], e["reason"]) for e in events},
                         {(f"::ffff:127.0.0.1:{port}", "TCP_SYN_SENT", "SKB_DROP_REASON_QDISC_DROP")}, events)
        self.assertEqual(events[0]["comm"], "kqex-tcpdrop")
        self.assertIn("tcp_connect", " ".join(events[0]["kstack"]))
        self.assertTrue(all("tcp_retransmit_skb" in " ".join(e["kstack"]) for e in events[1:]), events)

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+\S+\s+(\S+):(\d+)\s+(\S+):4242\s+(\S+)\s*$")
            self.assertEqual(rows, [("127.0.0.1", str(port), "127.0.0.1", "SYN_SENT")] * len(events), output[-3000:])
        self.compare(bt, check)

    def test_gethostlatency(self):
        path = workload("kqex-gethost", """
socket.getaddrinfo("localhost", 80)
libc.gethostbyname(b"127.0.0.1")
libc.gethostbyname2(b"127.0.0.2", socket.AF_INET)
""")
        bt = self.bpftrace("gethostlatency")
        events = traced("gethostlatency", path)
        mine = [(e["probe"].rsplit(":", 1)[1], e["host"]) for e in events if e["comm"] == "kqex-gethost"]
        self.assertEqual(mine, [("getaddrinfo", "localhost"), ("gethostbyname", "127.0.0.1"),
                                ("gethostbyname2", "127.0.0.2")])
        self.assertTrue(all(0 <= e["latms"] < 10000 for e in events), [e["latms"] for e in events])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-gethost\s+\d+\s+(.*)$")
            self.assertEqual([r[0] for r in rows], [host for _, host in mine], output[-3000:])
        self.compare(bt, check)

    def test_bashreadline(self):
        path = workload("kqex-bashreadline", """
import pty, select
pid, terminal = pty.fork()
if pid == 0:
    os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], {"HISTFILE": "", "PS1": "$ "})
def drain(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([terminal], [], [], 0.05)[0]:
            try:
                os.read(terminal, 4096)
            except OSError:
                return
drain(0.5)
for line in [b"echo kqex-one\\n", b"true kqex-two\\n", b"exit\\n"]:
    os.write(terminal, line)
    drain(0.2)
os.waitpid(pid, 0)
report(bash=pid)
""")
        if not os.access("/bin/bash", os.X_OK):
            self.skipTest("/bin/bash is not installed")
        bt = self.bpftrace("bashreadline")
        events = traced("bashreadline", path)
        bash = facts(path)["bash"]
        lines = ["echo kqex-one", "true kqex-two", "exit"]
        self.assertEqual([e["command"] for e in events if e["pid"] == bash], lines)

        def check(output):
            rows = bpftrace_rows(output, rf"\S+\s+{bash}\s+(.*)$")
            self.assertEqual([r[0] for r in rows], lines, output[-3000:])
        self.compare(bt, check)

    def test_capable(self):
        target = os.path.join(WORKDIR, "owned")
        path = workload("kqex-capable", f"""
fd = os.open({target!r}, os.O_RDWR | os.O_CREAT, 0o600)
os.fchown(fd, 1, 1)                       # CAP_CHOWN for the owner, and again for the group
os.setpriority(os.PRIO_PROCESS, 0, -1)    # CAP_SYS_NICE
child = os.fork()
if child == 0:
    os.setuid(65534)                      # CAP_SETUID
    try:
        os.fchown(fd, 0, 0)               # CAP_CHOWN, refused: EPERM
    except PermissionError:
        pass
    os._exit(0)
os.waitpid(child, 0)
""")
        bt = self.bpftrace("capable")
        events = traced("capable", path)
        # Leaving out CAP_SYS_ADMIN (21): the kernel asks for it, without auditing, for every
        # mapping a fork or an mmap accounts (cap_vm_enough_memory).
        mine = [(e["uid"], e["cap"], e["ret"]) for e in events if e["comm"] == "kqex-capable" and e["cap"] != 21]
        self.assertEqual(mine, [(0, 0, 0), (0, 0, 0), (0, 23, 0), (0, 7, 0), (65534, 0, -1)])
        names = {e["cap"]: e["name"] for e in events}
        self.assertEqual([names[c] for c in [0, 7, 23]], ["CAP_CHOWN", "CAP_SETUID", "CAP_SYS_NICE"])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+(\d+)\s+\d+\s+kqex-capable\s+(\d+)\s+\S+\s+\d+$")
            self.assertEqual([(int(u), int(c)) for u, c in rows if c != "21"], [(u, c) for u, c, _ in mine],
                             output[-3000:])
        self.compare(bt, check)

    def direct_writes(self, comm):
        """A workload that names itself `comm` and writes a file with O_DIRECT, to blocks it
        already has: one block request per write, of the write's size: 8 of 4 KiB, 3 of 64 KiB."""
        target = os.path.join(WORKDIR, comm + ".data")
        with open(target, "wb") as f:
            f.write(b"y" * (1 << 20))
            os.fsync(f.fileno())
        return workload(comm, f"""
import mmap
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"x" * (1 << 20))
fd = os.open({target!r}, os.O_RDWR | os.O_DIRECT)
for i in range(8):
    os.pwrite(fd, memoryview(buf)[:4096], i * 4096)
for i in range(3):
    os.pwrite(fd, memoryview(buf)[:65536], 65536 * (i + 1))
os.close(fd)
""")

    def test_biosnoop(self):
        path = self.direct_writes("kqex-biosnoop")
        kq = self.kq_session("biosnoop")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)  # the last completions
        mine = [e for e in kq.events() if e.get("issuer") == "kqex-biosnoop"]
        disk = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(os.stat(WORKDIR).st_dev)}:"
                                                  f"{os.minor(os.stat(WORKDIR).st_dev)}"))
        self.assertEqual(len(mine), 11, mine)
        self.assertEqual({e["disk"] for e in mine}, {disk}, mine)
        self.assertTrue(all(re.fullmatch(r"\d+\.\d{3}", e["lat_ms"]) for e in mine), mine)

    def test_biolatency(self):
        path = self.direct_writes("kqex-biolatency")
        kq = self.kq_session("biolatency")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)
        (table,) = kq.events()
        (row,) = table["rows"]
        # Every request of the machine is in it: at least the workload's 11.
        self.assertGreaterEqual(sum(b["count"] for b in row["usecs"]), 11, table)
        self.not_comparable("biolatency", "it sums every block request of the machine in one histogram")

    def test_runqlat(self):
        # Pinned to one CPU: a spinner, a sleeper, and the workload itself, which becomes a
        # real-time task spinning 250 ms while the sleeper wakes after 50 ms (then waits about
        # 200 ms) and the spinner, preempted, waits about 250 ms.
        path = workload("kqex-runqlat", """
cpu = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
spinner = os.fork()
if spinner == 0:
    spin(0.6)
    os._exit(0)
r, w = os.pipe()
sleeper = os.fork()
if sleeper == 0:
    os.write(w, b"x")
    time.sleep(0.05)
    os._exit(0)
os.read(r, 1)
while open(f"/proc/{sleeper}/stat").read().rsplit(")", 1)[1].split()[0] != "S":
    time.sleep(0.001)  # until the sleeper sleeps
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
spin(0.25)
os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
os.waitpid(spinner, 0)
os.waitpid(sleeper, 0)
""")
        kq = self.kq_session("runqlat")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        tables = {t["query"]: t["rows"][0]["usecs"] for t in kq.events()}
        woken, created, preempted = tables[1], tables[2], tables[3]
        longest = lambda hist: max((b["lo"] or 0 for b in hist if b["count"]), default=0)
        self.assertGreaterEqual(longest(woken), 131072, woken)       # the sleeper: ~200 ms
        self.assertGreaterEqual(longest(preempted), 131072, preempted)  # the spinner: ~250 ms
        self.assertGreaterEqual(sum(b["count"] for b in created), 2, created)  # two forks, at least
        self.not_comparable("runqlat", "it sums every run queue wait of the machine in one histogram")

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
        client, server = f"::ffff:127.0.0.1:{f['client']}", f"::ffff:127.0.0.1:{f['server']}"
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

    def test_writeback(self):
        # Dirty pages, then syncfs(): the flusher writes them back, for reason `sync`, on the
        # device of the workload's file system.
        target = os.path.join(WORKDIR, "dirty")
        path = workload("kqex-writeback", f"""
fd = os.open({target!r}, os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"x" * (1 << 20))
libc.syncfs(fd)
""")
        device = f"{os.major(os.stat(WORKDIR).st_dev)}:{os.minor(os.stat(WORKDIR).st_dev)}"
        bt = self.bpftrace("writeback")
        kq = self.kq_session("writeback")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)
        events = kq.events()
        self.assertIn((device, "WB_REASON_SYNC"), {(e["device"], e["reason"]) for e in events}, events[-20:])
        self.assertTrue(all(re.fullmatch(r"\d+\.\d{3}", e["ms"]) for e in events), events[-20:])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+(\S+)\s+\d+\s+(\S+)\s+\d+\.\d+$")
            self.assertIn((device, "sync"), set(rows), output[-3000:])
        self.compare(bt, check)
    def test_execsnoop(self):
        path = workload("kqex-execsnoop", """
subprocess.run(["/bin/echo", "kqex-exec", "two words"], stdout=subprocess.DEVNULL, check=True)
""")
        bt = self.bpftrace("execsnoop")
        events = traced("execsnoop", path)
        mine = [(e["pid"], e["args"]) for e in events if e["comm"] == "kqex-execsnoop"]
        self.assertEqual([args for _, args in mine], ["/bin/echo kqex-exec two words"])

        def check(output):
            rows = bpftrace_rows(output, r"\d+\s+(\d+)\s+(/bin/echo kqex-exec.*)$")
            self.assertEqual([(int(pid), args) for pid, args in rows], mine, output[-3000:])
        self.compare(bt, check)

    def test_runqlen(self):
        # Three processes spinning for a second on one CPU: whichever runs has (at least) two
        # waiting.
        path = workload("kqex-runqlen", """
cpu = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
spinners = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pass
        os._exit(0)
    spinners.append(pid)
for pid in spinners:
    os.waitpid(pid, 0)
""")
        (table,) = traced("runqlen", path)
        samples = {b["lo"]: b["count"] for b in table["rows"][0]["runqlen"] if b["count"]}
        # About 99 samples of the CPU (fewer when others share it), nearly all while a spinner
        # ran with the two others waiting (more, when others share the CPU).
        behind_two = sum(n for waiting, n in samples.items() if waiting >= 2)
        self.assertGreaterEqual(sum(samples.values()), 30, samples)
        self.assertGreaterEqual(behind_two, 0.8 * sum(samples.values()), samples)
        self.not_comparable("runqlen", "it samples every CPU of the machine in one histogram")

    def memory_cgroup(self, name, limit):
        """A memory cgroup of this process's own (cgroup v1 or v2) that holds `limit` bytes
        and may not swap, removed when the test ends; its `cgroup.procs` file."""
        with open("/proc/self/cgroup") as f:
            lines = [l.strip().split(":", 2) for l in f]
        v1 = next((p for _, controllers, p in lines if "memory" in controllers.split(",")), None)
        v2 = next((p for h, controllers, p in lines if h == "0" and controllers == ""), None)
        if v1 is not None and os.path.isdir("/sys/fs/cgroup/memory"):
            parent, settings = "/sys/fs/cgroup/memory" + v1, {"memory.limit_in_bytes": limit, "memory.swappiness": 0}
        elif v2 is not None and os.path.exists(f"/sys/fs/cgroup{v2}/cgroup.subtree_control") and \
                "memory" in open(f"/sys/fs/cgroup{v2}/cgroup.subtree_control").read().split():
            parent, settings = "/sys/fs/cgroup" + v2, {"memory.max": limit, "memory.swap.max": 0}
        else:
            self.skipTest("no memory cgroup to limit a workload in (cgroup v1 memory controller, or v2 "
                          "with memory in this cgroup's subtree_control)")
        group = os.path.join(parent, name)
        try:
            os.mkdir(group)
            for setting, value in settings.items():
                with open(os.path.join(group, setting), "w") as f:
                    f.write(str(value))
        except OSError as e:
            self.skipTest(f"cannot make a memory cgroup to run out of memory in: {e}")
        self.addCleanup(os.rmdir, group)
        return os.path.join(group, "cgroup.procs")

    def test_oomkill(self):
        procs = self.memory_cgroup("kqex-oomkill", 32 << 20)
        path = workload("kqex-oomkill", f"""
report(pid=os.getpid())
with open({procs!r}, "w") as f:
    f.write(str(os.getpid()))
memory = bytearray(200 << 20)  # over the cgroup's 32 MiB: killed
""")
        bt = self.bpftrace("oomkill")
        kq = self.kq_session("oomkill")
        killed = subprocess.run([PYTHON, path], timeout=60)
        self.assertEqual(killed.returncode, -9)
        pid = facts(path)["pid"]
        (event,) = [e for e in kq.events() if e["victim_comm"] == "kqex-oomkill"]
        # The workload set it off, and was the victim.
        self.assertEqual((event["pid"], event["comm"], event["victim_pid"]), (pid, "kqex-oomkill", pid))
        self.assertGreater(event["total_vm"], 0)
        self.assertRegex(event["loadavg"], r"^\d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+$")

        def check(output):
            rows = bpftrace_rows(output, r'.*Triggered by PID (\d+) \("kqex-oomkill"\), OOM kill of PID (\d+) ')
            self.assertEqual(rows, [(str(pid), str(pid))], output[-3000:])
        self.compare(bt, check)

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
        server = f"::ffff:127.0.0.1:{f['server']}"
        mine = [(e["saddr_sport"], e["daddr_dport"], e["result"]) for e in events if e["comm"] == "kqex-tcpconnect"]
        self.assertEqual(mine, [(f"::ffff:127.0.0.1:{f['clients'][0]}", server, 0),
                                (f"::ffff:127.0.0.1:{f['clients'][1]}", server, 0),
                                (f"::ffff:127.0.0.1:{f['clients'][2]}", server, -111)])  # ECONNREFUSED

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
        server = f"::ffff:127.0.0.1:{f['server']}"
        mine = [(e["raddr_rport"], e["laddr_lport"], e["backlog"]) for e in events if e["comm"] == "kqex-tcpaccept"]
        # The first accept leaves the second connection waiting; the second leaves none.
        self.assertEqual(mine, [(f"::ffff:127.0.0.1:{f['clients'][0]}", server, "1/8"),
                                (f"::ffff:127.0.0.1:{f['clients'][1]}", server, "0/8")])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+\d+\s+kqex-tcpaccept\s+\S+\s+(\d+)\s+\S+\s+(\d+)\s+\S+$")
            self.assertEqual([tuple(map(int, r)) for r in rows],
                             [(client, f["server"]) for client in f["clients"][:2]], output[-3000:])
        self.compare(bt, check)


if __name__ == "__main__":
    if SYSCALLS is None:
        print(f"SKIPPED: {skip_reason()}")
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
