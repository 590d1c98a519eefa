#!/usr/bin/env python3
"""Typed dumps of real events, differentially: two kq sessions print the same events, one as
text and one as JSON, and for each struct (an skb, its socket and device as a UDP datagram
leaves over loopback, the task a context switch takes off the CPU) the test checks that

  - every line of the text parses (no member without a value, no broken lines);
  - the JSON has exactly the members BTF says the captured bytes hold (read by
    tests/runtime/btf_types.py, not by kq), zeroes included, nothing past the capture;
  - the text's members are the JSON's with the same values, and every non-zero member of
    the JSON is in the text: the text leaves out zeroes and nothing else.

They need root and a kernel with BTF; without them every test is skipped with the reason.

Usage: dump_test.py PATH_TO_KQ
"""
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

import harness
from btf_types import Btf, ARRAY, ENUM, ENUM64, STRUCT, UNION
from harness import skip_reason

WORKDIR = tempfile.mkdtemp(prefix="kq-dump-")
CAPTURED = 1024  # what kq copies of a struct at most (docs/language.md, "Typed dumps")
MARK = 0x6B71D0

# Sends datagrams of 100, 101, ... bytes from a socket with locked buffer sizes and busy
# polling preferred (u8 members of `struct sock` libbpf's dumper lost), sleeping between
# them (a context switch each).
WORKLOAD = harness.write_file(WORKDIR, "send_and_sleep.py", f"""
import socket, time
time.sleep(2.5)  # for both sessions to attach
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
try:
    s.setsockopt(socket.SOL_SOCKET, 69, 1)  # SO_PREFER_BUSY_POLL
except OSError:
    pass
s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, {MARK})
for i in range(12):
    s.sendto(b"x" * (100 + i), ("127.0.0.1", 9))
    time.sleep(0.2)
""")


def split_cast(text):
    """`(struct sk_buff *)0x1` as ("struct sk_buff *", "0x1"); (None, text) without a cast."""
    if not text.startswith("("):
        return None, text
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0:
            return text[1:i], text[i + 1:]
    return None, text


def parse_text(lines):
    """A text dump's lines (`NAME = *(0xADDR) (struct T){` first) as (address, leaves by
    path, the lines that do not parse, the bytes said not captured). Anonymous structs and
    unions add nothing to a path, as in JSON; array elements add their index."""
    head = re.fullmatch(r"\S+ = \*\((0x[0-9a-f]+)\) \((.+)\)\{", lines[0])
    if not head:
        return None, {}, [lines[0]], None
    frames = [{"path": (), "array": False, "index": 0}]
    leaves, broken, not_captured = {}, [], None
    for raw in lines[1:]:
        t = raw.strip()
        if not frames:
            broken.append(raw)
            continue
        top = frames[-1]
        if t in ("}", "},", "]", "],"):
            frames.pop()
            continue
        m = re.fullmatch(r"/\* ([\d,]+) more bytes not captured \*/", t)
        if m:
            not_captured = int(m.group(1).replace(",", ""))
            continue
        in_array = any(f["array"] for f in frames)
        if top["array"]:
            name, rest = top["index"], t
            top["index"] += 1
        else:
            m = re.fullmatch(r"\.(\w+) = (.*)", t)
            name, rest = (m.group(1), m.group(2)) if m else (None, t)
            if not in_array:  # outside arrays, every value has its cast
                cast, rest = split_cast(rest)
                if cast is None:
                    broken.append(raw)
                    continue
        path = top["path"] + ((name,) if name is not None else ())
        if rest in ("{", "["):
            frames.append({"path": path, "array": rest == "[", "index": 0})
        elif rest in ("{},", "[],") and top["array"]:
            pass  # an element that is all zero
        elif name is None or not rest.endswith(",") or rest == ",":
            broken.append(raw)
        else:
            leaves[path] = rest[:-1]
    if frames:
        broken.append("(the dump does not end)")
    return head.group(1), leaves, broken, not_captured


def btf_members(btf, tid, captured):
    """What BTF says the first `captured` bytes of type `tid` hold: each leaf's path (as in
    kq's JSON) and (kind, type id); and the paths two members share (lifted from anonymous
    members into one name), which no dump can tell apart."""
    out, shared = {}, set()

    def add(path, kind, type_id):
        if path in out:
            shared.add(path)
        out[path] = (kind, type_id)

    def walk(tid, path, off):  # False once the capture has ended
        r = btf.resolved(tid)
        t = btf.types[r]
        size = btf.size(tid)
        if t.kind in (STRUCT, UNION):
            if off >= captured and path:
                return False
            for name, mtype, bit, bits in t.members:
                if bits:
                    if not name:
                        continue  # padding
                    first = off + bit // 8
                    if first + (bit % 8 + bits + 7) // 8 > captured:
                        return False
                    add(path + (name,), "bits", mtype)
                    continue
                inner = btf.types[btf.resolved(mtype)]
                if btf.size(mtype) == 0 or (not name and inner.kind not in (STRUCT, UNION)):
                    continue
                if not walk(mtype, path + ((name,) if name else ()), off + bit // 8):
                    return False
            return True
        if t.kind == ARRAY:
            if btf.is_char(t.elem):
                if off + size > captured:
                    return False
                add(path, "chars", r)
                return True
            if off >= captured:
                return False
            step = btf.size(t.elem)
            return all(walk(t.elem, path + (i,), off + i * step) for i in range(t.nelems))
        if off + size > captured:
            return False
        add(path, "enum" if t.kind in (ENUM, ENUM64) else "scalar", r)
        return True

    walk(tid, (), 0)
    return out, shared


def flat(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flat(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from flat(v, path + (i,))
    else:
        yield path, value


def unquoted(text):
    """A text dump's `"..."` as JSON has the same characters (`\\"` is a quote)."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    out, i, body = [], 0, text[1:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append('"' if body[i + 1] == '"' else body[i:i + 2])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def same(text, value, kind):
    try:
        if isinstance(value, bool):
            return text == ("1" if value else "0")
        if isinstance(value, int):
            return int(text, 0) == value
        if isinstance(value, float):
            return float(text) == value
        if kind == "chars":
            return unquoted(text) == value
        if value.startswith("0x"):
            return (0 if text == "(nil)" else int(text, 16)) == int(value, 16)
        return text == value  # an enumerator
    except ValueError:
        return False


def is_zero(btf, kind, type_id, value):
    if kind == "chars":
        return value == ""
    if isinstance(value, str) and kind == "enum":
        return dict(btf.types[type_id].values).get(value) == 0
    return value in (0, "0x0") or value is False


def text_events(out, keys, records):
    """Each event of a text session by its key (the row's `keys` numbers before its
    `records` addresses), with its dumps by name, as lines."""
    events = {}
    current = None
    for line in out.splitlines():
        if re.match(r"^\d\d:\d\d:\d\d", line):
            current = {}
            row = line.split()
            events[tuple(int(v) for v in row[-(keys + records):-records])] = current
            continue
        if current is None:
            continue
        m = re.match(r"^    (\S+) = \*\(", line)
        if m:
            current[m.group(1)] = [line[4:]]
        elif line.startswith("    ") and current:
            list(current.values())[-1].append(line[4:])
    return events


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TypedDumps(harness.KqTestCase):

    @classmethod
    def setUpClass(cls):
        cls.btf = Btf()

    def run_both(self, query):
        """The same query as text and as JSON, at once, on one workload's events (`-p`)."""
        workload = subprocess.Popen([sys.executable, WORKLOAD])
        sessions = [subprocess.Popen([harness.KQ, *fmt, "-p", str(workload.pid), query],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for fmt in (["--structs", "full"], ["-f", "json"])]
        try:
            workload.wait(timeout=60)
            outputs = [s.communicate(timeout=60) for s in sessions]
        finally:
            for p in [workload, *sessions]:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
                    p.wait(timeout=10)
        for s, (_, err) in zip(sessions, outputs):
            self.assertEqual(s.returncode, 0, err)
        (text, _), (js, _) = outputs
        return text, [json.loads(line) for line in js.splitlines() if line.startswith("{")]

    def check_dump(self, lines, value, type_name, problems):
        """One struct's text dump against its JSON dump and BTF; adds what is wrong to
        `problems` (by kind) and returns the text's leaves."""
        address, leaves, broken, not_captured = parse_text(lines)
        tid = self.btf.find(STRUCT, type_name)
        size = self.btf.size(tid)
        captured = min(size, CAPTURED)
        expected, shared = btf_members(self.btf, tid, captured)
        got = dict(flat({k: v for k, v in value.items() if k != "address"}))
        problems["lines that do not parse"] += broken
        if address != value["address"]:
            problems["addresses that differ"].append((address, value["address"]))
        if not_captured != (size - captured if size > captured else None):
            problems["the capture's end not said, or wrong"].append((not_captured, size - captured))
        problems["JSON members BTF does not have (or not captured)"] += sorted(set(got) - set(expected), key=str)
        problems["captured members JSON lacks"] += sorted(set(expected) - set(got), key=str)
        problems["text members not in JSON (not captured?) or with another value: (path, text, JSON)"] += [
            (p, t, got.get(p)) for p, t in leaves.items()
            if p not in shared and (p not in got or not same(t, got[p], expected.get(p, ('', 0))[0]))]
        problems["non-zero members the text leaves out: (path, JSON)"] += [
            (p, v) for p, v in got.items()
            if p not in shared and p in expected and p not in leaves and not is_zero(self.btf, *expected[p], v)]
        return leaves

    def check_events(self, text, events, keys, records):
        """The events of both sessions paired by the values of their `keys` fields; fails
        naming every problem of every dump."""
        text_by_key = text_events(text, len(keys), len(records))
        json_by_key = {tuple(e[k] for k in keys): e for e in events}
        both = sorted(set(text_by_key) & set(json_by_key))
        self.assertTrue(both, f"no event in both sessions: text {sorted(text_by_key)}, json {sorted(json_by_key)}")
        problems, dumps = {}, []
        for key in both:
            for name, type_name in records:
                found = collections.defaultdict(list)
                dumps.append(self.check_dump(text_by_key[key][name], json_by_key[key][name], type_name, found))
                for kind, items in found.items():
                    if items:
                        problems.setdefault(f"{name} ({type_name}): {kind}", []).extend(items)
        report = "".join(f"\n{kind}: {len(items)}, e.g. {items[:6]}" for kind, items in problems.items())
        if problems:
            self.fail(f"in {len(both)} events:{report}")
        return dumps

    def test_skb_its_socket_and_device(self):
        text, events = self.run_both(
            f"trace tracepoint:net:net_dev_start_xmit where skb->mark == {MARK} "
            "select skb->len as len, skb, skb->sk as sk, skb->dev as dev")
        records = [("skb", "sk_buff"), ("sk", "sock"), ("dev", "net_device")]
        dumps = self.check_events(text, events, ["len"], records)
        # What libbpf 1.1's dumper lost after the first NUL of a char array.
        sock = dumps[1]
        self.assertEqual(sock.get(("sk_userlocks",)), "3")
        self.assertEqual(dumps[2].get(("addr_len",)), "6")

    def test_task_taken_off_the_cpu(self):
        # The task is larger than what kq captures: the text ends where the capture does.
        text, events = self.run_both(
            "trace tracepoint:sched:sched_switch select prev->nvcsw as nv, prev->nivcsw as niv, prev")
        self.check_events(text, events, ["nv", "niv"], [("prev", "task_struct")])


if __name__ == "__main__":
    harness.main(sys.argv)
