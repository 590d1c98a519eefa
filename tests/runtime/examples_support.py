"""What the tests of the examples share (examples_test.py runs them): workloads that name
themselves, kq running an example to its end or in the background, bpftrace's own tool beside
it, and the parsing of what bpftrace prints."""
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
        # Modules a body imports are read before the name is taken: a cold module's read
        # would be a block request of the workload's (bitesize counted one 4 KiB read more).
        f.write(f"""import ctypes, json, mmap, os, socket, subprocess, sys, time
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
    """Runs example `name` with -f json to its end: the JSON objects it printed. A command
    (-c) that failed fails the test: kq says how it ended."""
    status, out, err = harness.kq("-f", "json", example(name), *args, timeout=timeout)
    if status != 0 or "kq: the command" in err:
        raise AssertionError(f"kq {name} exited with {status}:\n{err}\n{out[:3000]}")
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

    # Whether a SIGINT is sent again while it goes on running (bpftrace 0.17 sometimes misses
    # one that comes just after its BEGIN probe ran).
    resend_sigint = False

    def stop(self):
        """SIGINT, then what it printed: (stdout, stderr). Stopping again changes nothing."""
        deadline = time.monotonic() + 60
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=2 if self.resend_sigint else 60)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
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
        super().__init__([harness.KQ, "-v", "-f", "json", example(name), *args],
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
    resend_sigint = True

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
class ExampleTestCase(harness.KqTestCase):
    """A test of examples: the tracers it starts stop when it ends, however it ends, and it
    compares with bpftrace where bpftrace can run here."""

    def tearDown(self):
        self.doCleanups()  # the tracers stop before the check that nothing stays loaded
        super().tearDown()

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
