#!/usr/bin/env bash
# The VM tier: kernel-function tests (tests/vm/vm_test.py) inside VMs booting stock Debian
# kernels 6.12 (bookworm-backports) and 6.1 (bookworm-security). Skips, saying why, only
# where qemu cannot run at all.
#   tests/vm/run_vm_tests.sh PATH_TO_KQ
set -uo pipefail
cd "$(dirname "$0")/../.."
kq=$(realpath "$1")
if ! command -v qemu-system-x86_64 >/dev/null; then
  echo "SKIPPED: qemu-system-x86_64 is not installed (scripts/install-deps installs it)"
  exit 0
fi
status=0
# An object built against this machine's kernel, for the VMs to run (portability).
rm -f "$(dirname "$kq")/vm-portable.o"
if ! "$kq" build tests/vm/portable.kq -o "$(dirname "$kq")/vm-portable.o"; then
  echo "kq build of tests/vm/portable.kq failed"
  status=1
fi
for kernel in 6.12 6.1; do
  if ! out=$(python3 tests/vm/kqvm.py fetch "$kernel" 2>&1); then
    echo "$out"
    echo "SKIPPED: the Debian $kernel kernel package cannot be fetched, so no VM can boot it"
    continue
  fi
  echo "== kernel $kernel"
  python3 tests/vm/kqvm.py run "$kernel" --timeout 900 -- "python3 tests/vm/vm_test.py $kq" || status=1
done
exit $status
