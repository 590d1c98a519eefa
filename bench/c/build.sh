#!/usr/bin/env bash
# Builds the hand-written reference programs into OUTDIR (default build/bench-c): vmlinux.h
# from this kernel's BTF (bpftool), each *.bpf.c with clang -O2 -target bpf -g, and the
# libbpf loader with the host compiler. Prints why and exits 1 when a tool is missing.
#
#   bench/c/build.sh [OUTDIR]
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:-$src/../../build/bench-c}
mkdir -p "$out"
for tool in clang bpftool cc; do
  command -v "$tool" >/dev/null || { echo "no $tool: the C references need clang, bpftool and cc"; exit 1; }
done
[ -r /sys/kernel/btf/vmlinux ] || { echo "no /sys/kernel/btf/vmlinux: the C references need the kernel's BTF"; exit 1; }
[ -s "$out/vmlinux.h" ] || bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$out/vmlinux.h"
arch=$(uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
for c in "$src"/*.bpf.c; do
  o="$out/$(basename "${c%.c}").o"
  if [ ! -e "$o" ] || [ "$c" -nt "$o" ] || [ "$src/common.bpf.h" -nt "$o" ] || [ "$src/hist.bpf.h" -nt "$o" ]; then
    clang -O2 -g -target bpf "-D__TARGET_ARCH_$arch" -I"$out" -c "$c" -o "$o"
  fi
done
if [ ! -e "$out/loader" ] || [ "$src/loader.c" -nt "$out/loader" ]; then
  cc -O2 -Wall -Wextra -o "$out/loader" "$src/loader.c" -lbpf
fi
