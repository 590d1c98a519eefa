#!/usr/bin/env bash
# Startup: how long from exec to attached (and back out) for a one-liner, kq against
# bpftrace measured in the same run, on the same machine. Each command traces exec events
# while running `true` (-c), so the time is startup + attach + one tiny workload + teardown.
#
#   bench/startup.sh            (as root; installs bpftrace and hyperfine if missing)
source "$(dirname "$0")/setup.sh"

kq_cmd="build/kq 'trace tracepoint:sched:sched_process_exec select comm' -c /bin/true"
bt_cmd="bpftrace -e 'tracepoint:sched:sched_process_exec { printf(\"%s\\n\", comm); }' -c /bin/true"
check_cmd="build/kq check -e 'trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef'"

hyperfine --warmup 3 --runs 20 --export-json /tmp/kq-startup.json -N \
  --command-name kq "$kq_cmd" --command-name bpftrace "$bt_cmd" --command-name "kq check" "$check_cmd" \
  >/dev/null 2>&1 || hyperfine --warmup 3 --runs 20 --export-json /tmp/kq-startup.json \
  --command-name kq "$kq_cmd" --command-name bpftrace "$bt_cmd" --command-name "kq check" "$check_cmd" >/dev/null

python3 - <<'PY'
import json
r = {x["command"]: x for x in json.load(open("/tmp/kq-startup.json"))["results"]}
kq, bt, chk = r["kq"]["median"], r["bpftrace"]["median"], r["kq check"]["median"]
print(f"one-liner, exec to exit (median of 20): kq {kq*1000:.1f} ms, bpftrace {bt*1000:.1f} ms, "
      f"ratio bpftrace/kq = {bt/kq:.1f}x")
print(f"kq check of the seed query (median of 20): {chk*1000:.1f} ms")
PY

# Peak memory (maximum resident set) of the same one-liners.
kq_rss=$(/usr/bin/time -f '%M' sh -c "$kq_cmd" 2>&1 >/dev/null | tail -1)
bt_rss=$(/usr/bin/time -f '%M' sh -c "$bt_cmd" 2>&1 >/dev/null | tail -1)
echo "peak RSS of the one-liner: kq ${kq_rss} KiB, bpftrace ${bt_rss} KiB"
