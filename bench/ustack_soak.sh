#!/usr/bin/env bash
# A long `select ustack` session under process churn: kq names each short-lived process's
# frames from its own mappings, then forgets them when it exits, so its memory stays flat.
# Prints kq's RSS every 30 s and the growth from the first sample to the last.
#   bench/ustack_soak.sh [MINUTES] [PATH_TO_KQ]      (default: 10 minutes, build/kq)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
kq=$(realpath "${2:-build/kq}")
work=$(mktemp -d)
trap 'kill -INT "$kq_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
kq_pid=0
cat > "$work/churn.c" <<'C'
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
/* Each process calls getpid twice from a stack of its own, then lives 20 ms (a process
   gone before its stack is read has no mappings left to name its frames), then exits. */
__attribute__((noinline)) static void leaf(void) { syscall(SYS_getpid); syscall(SYS_getpid); }
__attribute__((noinline)) static void middle(void) { leaf(); }
int main(void) {
  middle();
  struct timespec t = {0, 20 * 1000 * 1000};
  nanosleep(&t, 0);
  return 0;
}
C
gcc -O1 -fno-omit-frame-pointer -o "$work/churn" "$work/churn.c"
"$kq" 'trace syscall:getpid where comm == "churn" select ustack' > "$work/events" 2> "$work/err" &
kq_pid=$!
sleep 2
end=$((SECONDS + minutes * 60))
next=$SECONDS
first=""
processes=0
while ((SECONDS < end)); do
  for _ in $(seq 1 50); do "$work/churn"; done
  processes=$((processes + 50))
  if ! kill -0 "$kq_pid" 2>/dev/null; then
    echo "kq exited early:"; cat "$work/err"; exit 1
  fi
  if ((SECONDS >= next)); then
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$kq_pid/status")
    first=${first:-$rss}
    echo "$(date +%T)  processes $processes  kq RSS ${rss} kB"
    next=$((SECONDS + 30))
  fi
done
rss=$(awk '/VmRSS/ {print $2}' "/proc/$kq_pid/status")
kill -INT "$kq_pid"
wait "$kq_pid" || true
events=$(grep -c " main+" "$work/events" || true)
echo "after $minutes min and $processes processes: RSS ${first} kB -> ${rss} kB ($(( (rss - first) )) kB); $events stacks through main"
tail -1 "$work/err"
