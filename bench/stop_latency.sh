#!/usr/bin/env bash
# Stop latency: how long kq takes to exit after SIGINT, and after its -d deadline, while a
# flood (`dd` making one-byte reads and writes) fires the traced tracepoint faster than kq
# can print. kq reads its ring buffer in slices and bounds its final read, so both should
# be about 100 ms whatever the load.
#
#   bench/stop_latency.sh [RUNS]     (as root, from the source directory, after a build)
set -u
RUNS=${1:-3}
KQ=${KQ:-build/kq}
QUERY='trace tracepoint:raw_syscalls:sys_enter select id'

now_ms() { date +%s%3N; }

dd if=/dev/zero of=/dev/null bs=1 count=500000000 status=none &
flood=$!
trap 'kill $flood 2>/dev/null' EXIT

for run in $(seq "$RUNS"); do
  "$KQ" "$QUERY" >/dev/null 2>/tmp/kq-stop.err &
  kq=$!
  sleep 1.5
  start=$(now_ms)
  kill -INT $kq
  wait $kq
  echo "SIGINT under a flood, run $run: $(( $(now_ms) - start )) ms from the signal to exit"
done

for run in $(seq "$RUNS"); do
  start=$(now_ms)
  "$KQ" "$QUERY" -d 1s >/dev/null 2>/tmp/kq-stop.err
  echo "-d 1s under a flood, run $run: $(( $(now_ms) - start - 1000 )) ms past the deadline (start-up included)"
done
