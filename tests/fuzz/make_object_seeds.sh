#!/bin/bash
# Rebuilds fuzz_object's seeds (tests/fuzz/corpus/object) with the kq given, as the plan's
# format changes: ObjectCheck.TheCorpusSeedsAreObjectsThisKqRuns fails until they are.
#   tests/fuzz/make_object_seeds.sh build/kq
set -euo pipefail
kq=$(realpath "$1")
out=$(dirname "$0")/corpus/object
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/tables_joins_records.kq" <<'KQ'
trace syscall:openat(return) as opens select comm, str(filename) as path, return as fd, hex(flags), comm, flags, fmt("%s:%d", comm, flags) limit 3
trace tracepoint:syscalls:sys_exit_clock_nanosleep
  join tracepoint:syscalls:sys_enter_clock_nanosleep as s on tid
  select (time - s.time) / 1000 as usecs, s.comm
trace syscall:read group by comm select count(), sum(count), avg(count), min(count), max(count), hist(count), lhist(count, 0, 1000, 100)
trace syscall:getpid select count()
trace syscall:write group by comm select top(3)
trace syscall:getp* where probe != "syscall:getpid" select probe, return
KQ
"$kq" build "$work/tables_joins_records.kq" -o "$out/tables_joins_records.o"
"$kq" build -e 'trace tracepoint:syscalls:sys_enter_vhangup select count()' -o "$out/keyless_count.o"
"$kq" build -e 'trace packet(kfree_skb, consume_skb, net_dev_xmit) select skb, len' -o "$out/packet.o"
# packet.o with one type id of its BTF past the last type (libbpf 1.1 crashed on it):
# the first VAR's type, made 212 past the last.
python3 - "$out/packet.o" "$out/malformed_btf_type_id.o" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
# Section headers: find .BTF.
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
def section(i):
    return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
names = section(shstrndx)[4]
btf = None
for i in range(shnum):
    s = section(i)
    name = data[names + s[0]:data.index(b"\0", names + s[0])].decode()
    if name == ".BTF":
        btf = s[4]
hdr_len, type_off, type_len = struct.unpack_from("<III", data, btf + 4)
at, end, tid, vars_ = btf + hdr_len + type_off, btf + hdr_len + type_off + type_len, 1, []
extra = {1: lambda v: 4, 3: lambda v: 12, 4: lambda v: 12 * v, 5: lambda v: 12 * v, 6: lambda v: 8 * v,
         13: lambda v: 8 * v, 14: lambda v: 4, 15: lambda v: 12 * v, 17: lambda v: 4, 19: lambda v: 12 * v}
while at < end:
    _, info, _ = struct.unpack_from("<III", data, at)
    kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
    if kind == 14:
        vars_.append((tid, at))
    at += 12 + extra.get(kind, lambda v: 0)(vlen)
    tid += 1
last = tid - 1
var, where = vars_[0]
struct.pack_into("<I", data, where + 8, last + 212)
open(sys.argv[2], "wb").write(data)
print(f"type {var} refers to type {last + 212}, but the last type is {last}")
PY
