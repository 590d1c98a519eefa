#!/usr/bin/env python3
"""In-kernel cost per event: the nanoseconds each BPF program spends per run
(kernel.bpf_stats_enabled: run_time_ns / run_cnt), for kq and for a reference kq binary
and bpftrace measured in the same run, on the same workload (UDP datagrams on loopback,
traced at tracepoint:net:net_dev_xmit).

  bench/kernel_cost.py [--reference OTHER_KQ] [--packets N]      (as root)

Prints one line per query: ns/event for each tool, and the ratio to kq.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

QUERIES = [
    ("rejecting filter",
     "trace tracepoint:net:net_dev_xmit(skb) where skb->mark == 0xdeadbeef select skb->len",
     'tracepoint:net:net_dev_xmit /((struct sk_buff *)args->skbaddr)->mark == 0xdeadbeef/ '
     '{ printf("%d\\n", ((struct sk_buff *)args->skbaddr)->len); }'),
    ("count by comm",
     "trace tracepoint:net:net_dev_xmit group by comm select count()",
     "tracepoint:net:net_dev_xmit { @[comm] = count(); }"),
    ("string compare and count",
     'trace tracepoint:net:net_dev_xmit(skb) where comm == "python3" group by skb->len select count()',
     'tracepoint:net:net_dev_xmit /comm == "python3"/ { @[((struct sk_buff *)args->skbaddr)->len] = count(); }'),
]


def programs(prefix_filter):
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, check=True)
    return [p for p in json.loads(out.stdout) if prefix_filter(p)]


def flood(packets):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"x" * 200
    for _ in range(packets):
        s.sendto(payload, ("127.0.0.1", 9))
    s.close()


def measure(cmd, match, packets):
    before = {p["id"] for p in programs(lambda p: True)}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        progs = []
        while time.monotonic() < deadline and not progs:
            time.sleep(0.2)
            progs = [p for p in programs(lambda p: p["id"] not in before and match(p))]
        if not progs:
            return None
        time.sleep(0.5)
        start = {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in progs}
        flood(packets)
        end = {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0))
               for p in programs(lambda p: p["id"] in start)}
        ns = sum(end[i][0] - start[i][0] for i in end)
        runs = sum(end[i][1] - start[i][1] for i in end)
        return ns / runs if runs else None
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kq", default="build/kq")
    parser.add_argument("--reference", help="another kq binary, measured in the same run")
    parser.add_argument("--packets", type=int, default=200000)
    args = parser.parse_args()
    subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=True)
    kq_match = lambda p: p.get("name", "").startswith("kq_prog")
    bt_match = lambda p: "net_dev_xmit" in p.get("name", "")
    tools = [("kq", args.kq)] + ([("reference", args.reference)] if args.reference else [])
    try:
        for name, kq_query, bt_query in QUERIES:
            row = {t: measure([path, "-d", "60s", kq_query], kq_match, args.packets) for t, path in tools}
            if shutil.which("bpftrace"):
                row["bpftrace"] = measure(["bpftrace", "-e", bt_query], bt_match, args.packets)
            base = row["kq"]
            cells = [f"{t} {v:.0f} ns" + (f" ({v / base:.2f}x)" if base and t != "kq" else "")
                     if v else f"{t} -" for t, v in row.items()]
            print(f"{name:<26} " + ", ".join(cells), flush=True)
    finally:
        subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=0"])


if __name__ == "__main__":
    sys.exit(main())
