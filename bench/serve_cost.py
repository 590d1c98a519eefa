"""What `kq serve` costs its machine: the CPU its process spends while a flood of system
calls is counted (in the kernel: the process only answers scrapes) and the CPU of one
scrape, against bpftrace keeping the same table and printing it every second, the way
one would export it without kq serve. CPU is read from /proc/PID/task/*/schedstat
(nanoseconds on a CPU, every thread)."""
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

import benchlib

SCRIPT = "trace tracepoint:raw_syscalls:sys_enter group by comm select count() as calls\n"
BPFTRACE = "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); } interval:s:1 { print(@); }"
FLOOD_C = r"""
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  for (long i = 0; i < n; i++) syscall(SYS_getppid);
  return 0;
}
"""


def cpu_ns(pid):
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def flood_tool():
    out = os.path.join(benchlib.C_DIR, "getppid_flood")
    if not os.path.exists(out):
        os.makedirs(benchlib.C_DIR, exist_ok=True)
        src = out + ".c"
        with open(src, "w") as f:
            f.write(FLOOD_C)
        subprocess.run(["cc", "-O2", "-o", out, src], check=True)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(kq, directory, port):
    proc = subprocess.Popen([kq, "serve", "--listen", f"127.0.0.1:{port}", directory],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    return None


def during_flood(pid, calls):
    """The CPU nanoseconds `pid` spent while the flood ran, and the flood's seconds."""
    before = cpu_ns(pid)
    started = time.monotonic()
    subprocess.run([flood_tool(), str(calls)], check=True)
    seconds = time.monotonic() - started
    after = cpu_ns(pid)
    return (after - before if before is not None and after is not None else None), seconds


def measure(kq, runs, calls=2_000_000, scrapes=200, bpftrace=True):
    """Medians: CPU µs per 1,000 events (kq serve, bpftrace), µs per scrape (kq serve) and
    per print (bpftrace: its CPU per second with nothing to count but its own table)."""
    out = {"kq": [], "bpftrace": [], "scrape": [], "print": [], "rate": []}
    directory = tempfile.mkdtemp(prefix="kq-bench-serve-")
    with open(os.path.join(directory, "calls.kq"), "w") as f:
        f.write(SCRIPT)
    for _ in range(runs):
        port = free_port()
        proc = start_serve(kq, directory, port)
        if not proc:
            continue
        try:
            spent, seconds = during_flood(proc.pid, calls)
            if spent is not None:
                out["kq"].append(spent / 1000 / (calls / 1000))
                out["rate"].append(calls / seconds)
            before = cpu_ns(proc.pid)
            for _ in range(scrapes):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    r.read()
            out["scrape"].append((cpu_ns(proc.pid) - before) / 1000 / scrapes)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        if not bpftrace:
            continue
        bt = subprocess.Popen(["bpftrace", "-e", BPFTRACE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not benchlib.prog_ids(bt.pid):
                time.sleep(0.1)
            time.sleep(1)
            spent, _ = during_flood(bt.pid, calls)
            if spent is not None:
                out["bpftrace"].append(spent / 1000 / (calls / 1000))
            before = cpu_ns(bt.pid)
            time.sleep(5)
            out["print"].append((cpu_ns(bt.pid) - before) / 1000 / 5)
        finally:
            bt.terminate()
            bt.wait(timeout=30)
    return {k: benchlib.median(v) for k, v in out.items()}
