#!/usr/bin/env python3
"""In-kernel cost of a join: the nanoseconds kq's programs spend per joined pair of events
(kernel.bpf_stats_enabled: run_time_ns summed over both sides, divided by the pairs), against
hand-written C (bench/c/join.bpf.c: a plain hash of entry times by thread id) and
bpftrace's way of writing the same thing (a map keyed by tid, set, read and deleted), on the
same workload: N getppid() calls, each an enter and an exit.

  bench/join_cost.py [--kq build/kq] [--calls N]      (as root)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

KQ_QUERY = ("trace tracepoint:syscalls:sys_exit_getppid "
            "join tracepoint:syscalls:sys_enter_getppid as e on tid select hist(time - e.time)")
BT_QUERY = ("tracepoint:syscalls:sys_enter_getppid { @s[tid] = nsecs; } "
            "tracepoint:syscalls:sys_exit_getppid /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }")


def programs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, check=True)
    return json.loads(out.stdout)


def stats(ids):
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in programs() if p["id"] in ids}


def measure(cmd, match, calls):
    """ns per enter+exit pair, over `calls` getppid() calls."""
    before = {p["id"] for p in programs()}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        ids = set()
        while time.monotonic() < deadline and len(ids) < 2:
            time.sleep(0.2)
            ids = {p["id"] for p in programs() if p["id"] not in before and match(p)}
        if len(ids) < 2:
            return None
        time.sleep(0.5)
        start = stats(ids)
        for _ in range(calls):
            os.getppid()
        end = stats(ids)
        return sum(end[i][0] - start[i][0] for i in end) / calls
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kq", default="build/kq")
    parser.add_argument("--calls", type=int, default=200000)
    args = parser.parse_args()
    subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=True)
    try:
        row = {"kq": measure([args.kq, "-d", "60s", KQ_QUERY],
                             lambda p: p.get("name", "").startswith("kq_prog"), args.calls)}
        c_missing = benchlib.c_references_missing()
        if not c_missing:
            row["C"] = measure(benchlib.c_reference("join"), lambda p: p.get("name", "").startswith("join_"), args.calls)
        if shutil.which("bpftrace"):
            row["bpftrace"] = measure(["bpftrace", "-e", BT_QUERY],
                                      lambda p: "getpp" in p.get("name", ""), args.calls)
        base = row["kq"]
        cells = [f"{t} {v:.0f} ns" + (f" ({v / base:.2f}x)" if base and t != "kq" else "")
                 if v else f"{t} -" for t, v in row.items()]
        print("join enter->exit, per pair: " + ", ".join(cells), flush=True)
    finally:
        subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=0"])


if __name__ == "__main__":
    sys.exit(main())
