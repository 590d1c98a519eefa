#!/usr/bin/env bash
# kq serve for a long while under a syscall flood with churning keys: a script counting
# system calls by process id (every short-lived process a new key, until the table's
# 10,240 groups are full and the rest are counted as lost), scraped every second. Prints
# kq serve's RSS every minute, then: scrapes that failed, the series limit's count, and the
# BPF programs left after SIGTERM (there must be none).
#   bench/serve_soak.sh [MINUTES] [PATH_TO_KQ]      (default: 30 minutes, build/kq)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
kq=$(realpath "${2:-build/kq}")
work=$(mktemp -d)
port=19535
serve_pid=0
trap 'kill -TERM "$serve_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/pids.kq" <<'KQ'
trace tracepoint:raw_syscalls:sys_enter
  group by pid, comm
  select count() as calls
KQ
"$kq" serve --listen "127.0.0.1:$port" "$work" 2> "$work/err" > /dev/null &
serve_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
end=$((SECONDS + minutes * 60))
next=$SECONDS
scrapes=0
failed=0
first=""
while ((SECONDS < end)); do
  for _ in $(seq 1 20); do /bin/true; done          # twenty new keys
  dd if=/dev/zero of=/dev/null bs=1 count=20000 status=none   # a burst of calls
  if curl -sf -o "$work/last" "http://127.0.0.1:$port/metrics"; then scrapes=$((scrapes + 1)); else failed=$((failed + 1)); fi
  if ((SECONDS >= next)); then
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$serve_pid/status")
    first=${first:-$rss}
    series=$(grep -c '^kq_pids_calls_total' "$work/last" || true)
    echo "$(date +%T)  RSS ${rss} kB  series ${series}  scrapes ${scrapes} (failed ${failed})"
    next=$((SECONDS + 60))
  fi
  sleep 1
done
rss=$(awk '/VmRSS/ {print $2}' "/proc/$serve_pid/status")
full=$(grep 'cause="table_full"' "$work/last" | awk '{print $2}')
started=$SECONDS
kill -TERM "$serve_pid"
wait "$serve_pid" || true
left=1
for _ in $(seq 1 50); do  # the kernel frees programs a moment after their last reference
  left=$(bpftool prog list 2>/dev/null | grep -c ' name kq_' || true)
  ((left == 0)) && break
  sleep 0.1
done
echo "after $minutes min: RSS ${first} kB -> ${rss} kB; ${scrapes} scrapes, ${failed} failed;" \
     "events of keys past the table's 10,240 groups (counted as lost): ${full:-0}; stopped in $((SECONDS - started)) s; kq programs left: ${left}"
