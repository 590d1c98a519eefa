#!/usr/bin/env python3
"""What printing costs the traced thread: a thread named kqflood calls getppid a million
times while a tracer prints an event for each, kq against the hand-written C (a libbpf
loader reading its ring every millisecond, bench/c/loader.c) and bpftrace in the same run.
The figure is what a call costs the flood beyond its untraced run (bench/flood.c): what the
tracer's program and its wakeups cost the thread it traces. Three runs of the flood: paced,
a call every 2 µs (slow enough for a reader to keep up, where a reader woken by each record
makes each call pay for a wakeup), and flat out, with a buffer that holds it all (64 MiB)
and with each tool's default buffer (what a burst loses). Every run is kept, so a run far
from the median shows in the spread.

    bench/print_cost.py [--kq build/kq] [--runs 5] [--calls 1000000]   (root; a bench/run section)
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import benchlib

QUERY = 'trace syscall:getppid where comm == "kqflood" select pid'
BPFTRACE = 'tracepoint:syscalls:sys_enter_getppid /comm == "kqflood"/ { printf("%d\\n", pid); }'
BIG = 64 << 20


def flood_tool():
    src = os.path.join(benchlib.ROOT, "bench", "flood.c")
    out = os.path.join(benchlib.C_DIR, "flood")
    os.makedirs(benchlib.C_DIR, exist_ok=True)
    if not os.path.exists(out) or os.path.getmtime(src) > os.path.getmtime(out):
        subprocess.run(["cc", "-O2", "-o", out, src], check=True)
    return out


GAP_NS = 2000


def flood(calls, gap):
    """What a call cost the flood, in ns."""
    out = subprocess.run([flood_tool(), str(calls), str(gap)], capture_output=True, text=True, check=True)
    return float(re.search(r"flood: ([\d.]+) ns per call", out.stderr).group(1))


def commands(kq, big, c_missing, bt_missing):
    out = {"kq": ([kq, *(["--buffer-size", "64M"] if big else []), QUERY], None)}
    if not c_missing:
        env = dict(os.environ, LOADER_RING_BYTES=str(BIG)) if big else None
        out["C"] = (benchlib.c_reference("print_getppid"), env)
    if not bt_missing:
        # bpftrace's perf buffers are per CPU: 64 MiB over the CPUs, in 4 KiB pages.
        pages = BIG // 4096 // max(1, os.cpu_count() or 1)
        env = dict(os.environ, BPFTRACE_PERF_RB_PAGES=str(pages)) if big else None
        out["bpftrace"] = (["bpftrace", "-e", BPFTRACE], env)
    return out


def lost(tool, err):
    pattern = {"kq": r"(\d+) lost", "C": r"(\d+) lost", "bpftrace": r"Lost (\d+) events"}[tool]
    m = re.search(pattern, err)
    return int(m.group(1)) if m else 0


def traced(tool, cmd, env, calls, gap):
    """(ns per call, events lost) of the flood under one tracer run, or None."""
    with tempfile.TemporaryFile() as err:
        tracer = benchlib.Measured(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        if tool == "bpftrace":
            time.sleep(2.0)  # its programs come and go as it starts
        if not benchlib.wait_for_programs(tracer):
            tracer.finish(signal.SIGINT)
            return None
        per_call = flood(calls, gap)
        time.sleep(0.5)  # the tracer reads what is left
        tracer.finish(signal.SIGINT)
        err.seek(0)
        return per_call, lost(tool, err.read().decode(errors="replace"))


MODES = (("paced", GAP_NS, True), ("flood", 0, True), ("flood, default buffer", 0, False))


def measure(kq, runs, calls, c_missing, bt_missing):
    """{(tool, mode): [(ns per call beyond the untraced run, lost), ...]} and the untraced ns
    of each mode."""
    untraced = {gap: benchlib.median([flood(calls, gap) for _ in range(runs)]) for gap in (0, GAP_NS)}
    results = {}
    for mode, gap, big in MODES:
        cmds = commands(kq, big, c_missing, bt_missing)
        for _ in range(runs):
            for tool, (cmd, env) in cmds.items():
                r = traced(tool, cmd, env, calls, gap)
                if r:
                    results.setdefault((tool, mode), []).append((r[0] - untraced[gap], r[1]))
    return results, untraced


def print_rows(table, kq, runs, c_missing, bt_missing, calls=1000000):
    results, untraced = measure(kq, runs, calls, c_missing, bt_missing)
    table.section(f"printing: {calls // 1000}k getppid calls, each an event printed; what a call costs the "
                  f"traced thread beyond its untraced {untraced[0]:.0f} ns (C reads every 1 ms)")

    def cost(tool, mode):
        return benchlib.median([c for c, _ in results.get((tool, mode), [])])

    def worst(tool, mode):
        costs = [c for c, _ in results.get((tool, mode), [])]
        med = benchlib.median(costs)
        return max(costs) / med if costs and med else None

    def lost_share(tool, mode):
        return benchlib.median([100.0 * n / calls for _, n in results.get((tool, mode), [])])

    refs = lambda f, mode: [(t, f(t, mode)) for t in ("C", "bpftrace") if (t, mode) in results]
    table.add(f"per printed event, a call every {GAP_NS // 1000} µs", "ns", cost("kq", "paced"), refs(cost, "paced"))
    table.add("  slowest run / median", "x", worst("kq", "paced"), refs(worst, "paced"))
    table.add("per printed event, flat out (64 MiB buffer)", "ns", cost("kq", "flood"), refs(cost, "flood"))
    table.add("  slowest run / median", "x", worst("kq", "flood"), refs(worst, "flood"))
    table.add("events lost flat out, default buffer", "%", lost_share("kq", "flood, default buffer"),
              refs(lost_share, "flood, default buffer"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kq", default=os.path.join(benchlib.ROOT, "build", "kq"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1000000)
    args = parser.parse_args()
    results, untraced = measure(args.kq, args.runs, args.calls, benchlib.c_references_missing(),
                                benchlib.bpftrace_missing())
    print(f"untraced: {untraced[0]:.1f} ns a call flat out, {untraced[GAP_NS]:.1f} ns paced")
    for (tool, mode), runs in sorted(results.items()):
        print(f"{tool:9} {mode:22} ns beyond: {' '.join(f'{c:7.1f}' for c, _ in runs)}   "
              f"lost: {' '.join(str(n) for _, n in runs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
