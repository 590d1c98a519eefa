#!/usr/bin/env python3
"""The examples (examples/*.kq), each run against a workload whose answer is known: the test
asserts on the values kq printed (counts, names, sizes). Where bpftrace can run its own tool
(/usr/sbin/NAME.bt) here, it runs beside kq on the same workload and the two must agree on
the workload's values (never on timestamps). Needs root and a kernel with BTF: without them
every test is skipped, saying why; without bpftrace only the comparisons are.

Usage: examples_test.py PATH_TO_KQ [unittest arguments]
"""
import os
import shutil
import subprocess
import sys

import harness
from examples_disk_cpu import DiskAndCpuExamples
from examples_net import NetworkExamples
from examples_support import (EXAMPLES, PYTHON, SYSCALLS, WORKDIR, ExampleTestCase, bpftrace_rows, facts,
                              skip_reason, traced, workload)


class ProcessExamples(ExampleTestCase):
    """Processes and their system calls: syscount, opensnoop, statsnoop, syncsnoop, killsnoop,
    naptime, setuids, execsnoop, capable, pidpersec, gethostlatency, threadsnoop, bashreadline,
    oomkill."""

    def test_every_example_of_a_bpftrace_tool_is_tested(self):
        # Here, or (kernel functions) in the VM tier.
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm", "vm_test.py")) as f:
            vm_tests = f.read()
        for name in sorted(os.listdir(EXAMPLES)):
            if not name.endswith(".kq"):
                continue  # README.md, serve/ (kq serve's, tested in serve_test.py)
            with open(os.path.join(EXAMPLES, name)) as f:
                if f"bpftrace's {name[:-3]}.bt" not in f.read():
                    continue
            tool = name[:-3]
            tested = any(hasattr(c, f"test_{tool}") for c in [ProcessExamples, DiskAndCpuExamples, NetworkExamples])
            self.assertTrue(tested or f"def test_{tool}(" in vm_tests,
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

    def test_execsnoop_keeps_a_long_argument_whole(self):
        long_arg = "x" * 199 + "!"
        path = workload("kqex-execlong", f"""
subprocess.run(["/bin/echo", {long_arg!r}, "after"], stdout=subprocess.DEVNULL, check=True)
""")
        events = traced("execsnoop", path)
        self.assertEqual([e["args"] for e in events if e["comm"] == "kqex-execlong"],
                         [f"/bin/echo {long_arg} after"])

    def tls_exchange(self, comm):
        """A workload that makes a TLS connection to itself over loopback (a key and
        certificate made by openssl for the test), the client writing `hello` and the server
        answering it upper-cased: two handshakes, two writes, two reads."""
        if shutil.which("openssl") is None:
            self.skipTest("`openssl` is not installed; the workload needs a certificate")
        key, cert = os.path.join(WORKDIR, "tls-key.pem"), os.path.join(WORKDIR, "tls-cert.pem")
        if not os.path.exists(cert):
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                            "-keyout", key, "-out", cert, "-days", "1"], check=True, capture_output=True)
        return workload(comm, f"""
import ssl, threading
server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server_ctx.load_cert_chain({cert!r}, {key!r})
client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
client_ctx.check_hostname = False
client_ctx.verify_mode = ssl.CERT_NONE
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
def serve():
    conn, _ = listener.accept()
    with server_ctx.wrap_socket(conn, server_side=True) as s:
        s.sendall(s.recv(100).upper())
t = threading.Thread(target=serve)
t.start()
with client_ctx.wrap_socket(socket.create_connection(listener.getsockname())) as c:
    c.sendall(b"hello")
    assert c.recv(100) == b"HELLO"
t.join()
""")

    def test_sslsnoop(self):
        path = self.tls_exchange("kqex-sslsnoop")
        bt = self.bpftrace("sslsnoop")
        events = traced("sslsnoop", path)
        calls = sorted((e["func"], e["ret"]) for e in events)
        # Python calls OpenSSL 3's SSL_read_ex and SSL_write_ex, each returning 1.
        self.assertEqual(calls, [("SSL_do_handshake", 1)] * 2 + [("SSL_read_ex", 1)] * 2 + [("SSL_write_ex", 1)] * 2,
                         events)
        self.assertEqual(len({e["tid"] for e in events}), 2, events)  # the client's thread and the server's

        def check(output):
            rows = bpftrace_rows(output, r"\d+\s+\d+\s+kqex-ss\S*\s+\d+\s+(-?\d+)\s+(\S+)$")
            self.assertEqual(sorted((f, int(r)) for r, f in rows if f == "SSL_do_handshake"),
                             [("SSL_do_handshake", 1)] * 2, output[-3000:])
        self.compare(bt, check)

    def test_ssllatency(self):
        path = self.tls_exchange("kqex-ssllat")
        (table,) = traced("ssllatency", path)
        counts = {(r["func"], r["(s8)return >= 1"]): r["count()"] for r in table["rows"]}
        self.assertEqual(counts, {("SSL_do_handshake", True): 2, ("SSL_read_ex", True): 2, ("SSL_write_ex", True): 2})
        for r in table["rows"]:
            self.assertEqual(sum(b["count"] for b in r["usecs"]), r["count()"], r)
        self.not_comparable("ssllatency", "Python calls SSL_read_ex and SSL_write_ex, which the tool does not trace")

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

    def test_threadsnoop(self):
        # glibc lists pthread_create once per symbol version: one function, found by kq at
        # its file offset. Python starts each thread through its own pythread_wrapper.
        path = workload("kqex-threads", """
import threading
for _ in range(3):
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
""")
        events = traced("threadsnoop", path)
        mine = [e["func"] for e in events if e["comm"] == "kqex-threads"]
        self.assertEqual(len(mine), 3, events)
        self.assertTrue(all(f.startswith("pythread_wrapper") for f in mine), mine)

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


if __name__ == "__main__":
    if SYSCALLS is None:
        print(f"SKIPPED: {skip_reason()}")
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
