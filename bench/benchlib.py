"""What the benchmarks share: running a tracer as a measured child process (wall time, CPU
time and peak RSS from wait4), finding the BPF programs a process holds, the references kq
is compared with (hand-written C, bpftrace) and why one is missing."""
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_DIR = os.path.join(ROOT, "build", "bench-c")


@dataclass
class Run:
    """One finished command: seconds from fork to exit, CPU seconds (user + system, with the
    children it waited for), peak resident set in KiB (the largest of the command and those
    children) and exit status, as bench/measure.c saw them."""
    wall: float
    cpu: float
    max_rss_kib: int
    status: int


class Measured:
    """A command running under bench/measure.c; `pid` is the command's own."""

    def __init__(self, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=None):
        self.report = tempfile.NamedTemporaryFile(prefix="kq-bench-", delete=False)
        self.report.close()
        self.proc = subprocess.Popen([measure_tool(), self.report.name] + cmd,
                                     stdout=stdout, stderr=stderr, cwd=ROOT, env=env)
        self._pid = None

    @property
    def pid(self):
        """The command's process id (measure's child), once it has been forked."""
        deadline = time.monotonic() + 5
        while self._pid is None and time.monotonic() < deadline and self.running():
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    found = f.read().split()
            except OSError:
                found = []
            if found:
                self._pid = int(found[0])
            else:
                time.sleep(0.001)
        return self._pid

    def running(self):
        return self.proc.poll() is None

    def finish(self, sig=None, timeout=60):
        """Waits for the command (after sending it `sig`) and returns its Run."""
        if sig is not None and self.running():
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            if self._pid:
                os.kill(self._pid, signal.SIGKILL)
            self.proc.wait()
        with open(self.report.name) as f:
            fields = f.read().split()
        os.unlink(self.report.name)
        if len(fields) != 4:
            return None
        return Run(float(fields[0]), float(fields[1]), int(fields[2]), int(fields[3]))


_measure = None


def measure_tool():
    """bench/measure.c, built with cc into build/bench-c on first use."""
    global _measure
    if _measure is None:
        src = os.path.join(ROOT, "bench", "measure.c")
        out = os.path.join(C_DIR, "measure")
        os.makedirs(C_DIR, exist_ok=True)
        if not os.path.exists(out) or os.path.getmtime(src) > os.path.getmtime(out):
            subprocess.run(["cc", "-O2", "-o", out, src], check=True)
        _measure = out
    return _measure


def run_measured(cmd, timeout=60):
    """Runs `cmd` to its end."""
    return Measured(cmd).finish(timeout=timeout)


def prog_ids(pid):
    """The ids of the BPF programs process `pid` holds a descriptor of (programs, links)."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    try:
        fds = os.listdir(fdinfo)
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"{fdinfo}/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def wait_for_programs(run, timeout=30, settle=0.3):
    """The programs a Measured command loaded, once it holds some (and they stopped
    changing)."""
    deadline = time.monotonic() + timeout
    ids = set()
    while time.monotonic() < deadline and run.running() and run.pid:
        ids = prog_ids(run.pid)
        if ids:
            time.sleep(settle)
            later = prog_ids(run.pid)
            if later == ids:
                return ids
            ids = later
        time.sleep(0.05)
    return ids


def drop_from_page_cache(path):
    """Drops a binary's pages from the page cache, so that they come back as an installed
    binary's do when it runs (read ahead by its own page faults), not as the linker wrote
    them: written pages can sit in large folios, and a fault maps a whole folio (up to 256
    KiB here), which makes a freshly linked binary's resident set look larger than it is."""
    path = shutil.which(path) or path
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def bpftrace_missing():
    """Why bpftrace rows are skipped, or None."""
    return None if shutil.which("bpftrace") else "bpftrace is not installed"


def c_references_missing():
    """Builds the C references (bench/c/build.sh); why their rows are skipped, or None."""
    script = os.path.join(ROOT, "bench", "c", "build.sh")
    out = subprocess.run([script, C_DIR], capture_output=True, text=True)
    if out.returncode != 0:
        return (out.stdout + out.stderr).strip().splitlines()[-1] if (out.stdout + out.stderr).strip() \
            else "bench/c/build.sh failed"
    return None


def c_reference(name):
    """The command that runs C reference `name` (bench/c/NAME.bpf.c) until SIGINT."""
    return [os.path.join(C_DIR, "loader"), os.path.join(C_DIR, name + ".bpf.o")]
