#!/usr/bin/env bash
# Throughput: a busy workload (`dd` reading and writing one byte at a time, N times) traced
# by kq and by bpftrace in the same run: printing one line per read event, and counting the
# reads in the kernel. Wall time covers startup, attach, the workload, draining the events
# and teardown; CPU is the tracer's user+system time. Lines and lost events show whether
# each tool kept up.
#
#   bench/throughput.sh [N]     (as root; installs bpftrace and hyperfine if missing)
source "$(dirname "$0")/setup.sh"
N=${1:-200000}

work="/bin/dd if=/dev/zero of=/dev/null bs=1 count=$N status=none"
kq_print="build/kq 'trace syscall:read where comm == \"dd\" select count' -c '$work'"
bt_print="bpftrace -e 'tracepoint:syscalls:sys_enter_read /comm == \"dd\"/ { printf(\"%d\\n\", args->count); }' -c '$work'"
kq_count="build/kq 'trace syscall:read where comm == \"dd\" group by comm select comm, count()' -c '$work'"
bt_count="bpftrace -e 'tracepoint:syscalls:sys_enter_read /comm == \"dd\"/ { @[comm] = count(); }' -c '$work'"

hyperfine --warmup 1 --runs 5 --export-json /tmp/kq-throughput.json \
  --command-name "kq print" "$kq_print >/dev/null 2>&1" \
  --command-name "bpftrace print" "$bt_print >/dev/null 2>&1" \
  --command-name "kq count" "$kq_count >/dev/null 2>&1" \
  --command-name "bpftrace count" "$bt_count >/dev/null 2>&1" >/dev/null

# One more run of each printing command, to count what reached the user.
kq_lines=$(sh -c "$kq_print" 2>/tmp/kq-throughput.err | grep -c ' dd ' || true)
kq_lost=$(grep -o '[0-9]* lost' /tmp/kq-throughput.err | grep -o '[0-9]*' || echo '?')
bt_lines=$(sh -c "$bt_print" 2>/tmp/bt-throughput.err | grep -c '^[0-9]' || true)
bt_lost=$( (grep -o 'Lost [0-9]*' /tmp/bt-throughput.err || echo 'Lost 0') | grep -o '[0-9]*' | head -1)

python3 - "$N" "$kq_lines" "$kq_lost" "$bt_lines" "$bt_lost" <<'PY'
import json, sys
n, kq_lines, kq_lost, bt_lines, bt_lost = sys.argv[1:]
r = {x["command"]: x for x in json.load(open("/tmp/kq-throughput.json"))["results"]}
def line(what):
    kq, bt = r[f"kq {what}"], r[f"bpftrace {what}"]
    kq_cpu, bt_cpu = kq["user"] + kq["system"], bt["user"] + bt["system"]
    print(f"{what:>5}, {n} reads (median of 5): kq {kq['median']:.2f} s wall / {kq_cpu:.2f} s CPU, "
          f"bpftrace {bt['median']:.2f} s wall / {bt_cpu:.2f} s CPU; "
          f"ratio bpftrace/kq wall {bt['median']/kq['median']:.2f}x, CPU {bt_cpu/kq_cpu:.2f}x")
line("print")
line("count")
print(f"events printed: kq {kq_lines} lines, {kq_lost} lost; bpftrace {bt_lines} lines, {bt_lost} lost")
PY
