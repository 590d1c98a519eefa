#!/usr/bin/env python3
"""In-kernel cost per event: the nanoseconds each BPF program spends per run
(kernel.bpf_stats_enabled: run_time_ns / run_cnt of the programs the tracer holds), for kq,
hand-written C (bench/c, clang -O2, loaded by bench/c/loader.c), bpftrace and optionally
another kq binary, measured in the same run on the same workload: UDP datagrams on
loopback, traced at tracepoint:net:net_dev_xmit.

  bench/kernel_cost.py [--reference OTHER_KQ] [--packets N] [--runs R]     (as root)

Prints one line per workload: the median ns/event of each tool, and its ratio to kq.
"""
import argparse
import json
import os
import socket
import subprocess
import signal
import sys
from dataclasses import dataclass

import benchlib

SKB = "((struct sk_buff *)args->skbaddr)"


@dataclass
class Workload:
    name: str
    kq: str        # the kq query
    c: str         # bench/c/<c>.bpf.c
    bpftrace: str  # the bpftrace program
    packets_scale: float = 1.0  # of --packets: workloads that write every event send fewer
    # Workloads that write every event: buffers that hold the whole flood (the readers are
    # stopped while it runs, see measure()).
    kq_args: tuple = ()
    bpftrace_env: tuple = ()


WORKLOADS = [
    Workload("rejecting filter",
             "trace tracepoint:net:net_dev_xmit(skb) where skb->mark == 0xdeadbeef select skb->len",
             "reject",
             f'tracepoint:net:net_dev_xmit /{SKB}->mark == 0xdeadbeef/ {{ printf("%d\\n", {SKB}->len); }}'),
    Workload("filter, count by length",
             "trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 group by skb->len select count()",
             "count_len",
             f"tracepoint:net:net_dev_xmit /{SKB}->len > 100/ {{ @[{SKB}->len] = count(); }}"),
    Workload("count by comm (string key)",
             "trace tracepoint:net:net_dev_xmit group by comm select count()",
             "count_comm",
             "tracepoint:net:net_dev_xmit { @[comm] = count(); }"),
    Workload("hist of length",
             "trace tracepoint:net:net_dev_xmit(skb) select hist(skb->len)",
             "hist",
             f"tracepoint:net:net_dev_xmit {{ @ = hist({SKB}->len); }}"),
    Workload("typed dump of skb",
             "trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 select skb",
             "dump",
             f"tracepoint:net:net_dev_xmit /{SKB}->len > 100/ {{ print(*{SKB}); }}",
             packets_scale=0.1, kq_args=("--buffer", "16M"),
             bpftrace_env=(("BPFTRACE_PERF_RB_PAGES", "4096"),)),
]


def queries_workload(n):
    """n count() queries on one tracepoint sharing a filter: one script for kq (its queries
    share the tracepoint's program), n probe blocks for bpftrace, one program for C."""
    query = "trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 select count()\n"
    path = os.path.join("/tmp", f"kq-bench-{n}-queries.kq")
    with open(path, "w") as f:
        f.write(query * n)
    blocks = " ".join(f"tracepoint:net:net_dev_xmit /args->len > 100/ {{ @q{i} = count(); }}" for i in range(n))
    return Workload(f"{n} quer{'y' if n == 1 else 'ies'} sharing a filter", path, f"queries{n}", blocks)


WORKLOADS += [queries_workload(n) for n in (1, 10, 50)]


def program_stats(ids):
    """run_time_ns summed over the programs `ids` (bpftool), and how many events they ran
    for: every workload's programs are on the one tracepoint, so each runs once an event
    (bpftrace's 10 probe blocks are 10 programs: 10 runs an event, not 10 events)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, check=True, text=True)
    progs = [p for p in json.loads(out.stdout) if p["id"] in ids]
    return sum(p.get("run_time_ns", 0) for p in progs), max((p.get("run_cnt", 0) for p in progs), default=0)


def flood(packets):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"x" * 200
    for _ in range(packets):
        s.sendto(payload, ("127.0.0.1", 9))
    s.close()


def measure(cmd, packets, env=None):
    """ns per event of the programs `cmd` loads while `packets` datagrams are sent, or None
    when it loaded nothing. The tracer is stopped (SIGSTOP) meanwhile: a record submitted
    while its reader is caught up queues a wakeup (an irq_work, a self-IPI: a microsecond or
    two in a VM), so with a reader running, a program's figure would be its reader's pace
    (a fast reader is woken for every event, one that prints falls behind and is not)."""
    run = benchlib.Measured(cmd, env=env)
    try:
        ids = benchlib.wait_for_programs(run)
        if not ids:
            return None
        ns0, runs0 = program_stats(ids)
        os.kill(run.pid, signal.SIGSTOP)
        try:
            flood(packets)
            ns1, runs1 = program_stats(ids)
        finally:
            os.kill(run.pid, signal.SIGCONT)
        return (ns1 - ns0) / (runs1 - runs0) if runs1 > runs0 else None
    finally:
        run.finish(signal.SIGINT)


def tools(kq, reference, skipped):
    """(tool name, command for a workload) of every tool that can run; why others cannot
    goes into `skipped`."""
    out = [("kq", lambda w: [kq, *w.kq_args, w.kq])]
    if reference:
        out.append(("reference", lambda w: [reference, *w.kq_args, w.kq]))
    why = benchlib.c_references_missing()
    if why:
        skipped["C"] = why
    else:
        out.append(("C", lambda w: benchlib.c_reference(w.c)))
    why = benchlib.bpftrace_missing()
    if why:
        skipped["bpftrace"] = why
    else:
        out.append(("bpftrace", lambda w: ["bpftrace", "-e", w.bpftrace]))
    return out


def measure_all(kq, reference=None, packets=200000, runs=3, report=None):
    """{workload name: {tool: median ns/event}} and {tool: why it was skipped}."""
    skipped = {}
    chosen = tools(kq, reference, skipped)
    results = {}
    subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=True)
    try:
        for w in WORKLOADS:
            n = max(1000, int(packets * w.packets_scale))
            samples = {name: [] for name, _ in chosen}
            env = dict(os.environ, **dict(w.bpftrace_env))
            for _ in range(runs):  # interleaved, so that a change of load hits every tool
                for name, command in chosen:
                    samples[name].append(measure(command(w), n, env if name == "bpftrace" else None))
            results[w.name] = {name: benchlib.median(v) for name, v in samples.items()}
            if report:
                report(w, results[w.name])
    finally:
        subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=0"])
    return results, skipped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kq", default="build/kq")
    parser.add_argument("--reference", help="another kq binary, measured in the same run")
    parser.add_argument("--packets", type=int, default=200000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    def report(w, row):
        base = row.get("kq")
        cells = [f"{t} {v:.0f} ns" + (f" ({v / base:.2f}x)" if base and t != "kq" else "")
                 if v else f"{t} -" for t, v in row.items()]
        print(f"{w.name:<28} " + ", ".join(cells), flush=True)

    _, skipped = measure_all(args.kq, args.reference, args.packets, args.runs, report)
    for tool, why in skipped.items():
        print(f"{tool} skipped: {why}")


if __name__ == "__main__":
    sys.exit(main())
