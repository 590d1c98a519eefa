# Sourced by the benchmarks: run from the project root, with bpftrace, hyperfine and GNU time
# installed (they compare kq against bpftrace in the same run) and kq built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for p in bpftrace hyperfine time; do
  dpkg -s "$p" >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done
[ -x build/kq ] || scripts/build
