#!/usr/bin/env python3
"""`kq build SCRIPT -o FILE` then `kq run FILE` on the running kernel: the object prints
what the script run directly prints (events, a `group by` table, a join) for workloads
whose answer is known, and refuses, saying why, what this kernel cannot give it (a
tracepoint record laid out differently, a tracepoint or member it lacks).
Usage: object_test.py PATH_TO_KQ"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import kq

WORKDIR = tempfile.mkdtemp(prefix="kq-object-")


def path(name):
    return os.path.join(WORKDIR, name)


# Names itself kqobjwork, then opens /etc/hostname 3 times and /etc/passwd twice, and
# sleeps 5 x 20 ms.
WORKLOAD = harness.write_file(WORKDIR, "work.py", """
import ctypes, time
ctypes.CDLL(None).prctl(15, b"kqobjwork", 0, 0, 0)
for name in ["/etc/hostname"] * 3 + ["/etc/passwd"] * 2:
    open(name).close()
for _ in range(5):
    time.sleep(0.02)
""")

OPENS = ('trace syscall:openat(filename, flags, return) where comm == "kqobjwork"\n'
         '  select comm, str(filename) as path, return as fd\n')
COUNTS = ('trace syscall:openat(filename) where comm == "kqobjwork"\n'
          '  group by str(filename) select str(filename) as path, count() as opens\n')
SLEEPS = ('trace tracepoint:syscalls:sys_exit_clock_nanosleep\n'
          '  join tracepoint:syscalls:sys_enter_clock_nanosleep as s on tid\n'
          '  where comm == "kqobjwork" select (time - s.time) / 1000 as usecs, s.comm\n')


def traced(*args):
    """Runs kq with ARGS until it has attached (-v says so), then the workload, then stops
    kq with SIGINT: (status, stdout, stderr without libbpf's lines)."""
    proc = subprocess.Popen([harness.KQ, "-v", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if re.match(r"kq: .*: (tracepoint|tp_btf|raw_tp)", line):
            break
    else:
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, "".join(seen) + err
    subprocess.run([sys.executable, WORKLOAD], check=True, timeout=30)
    time.sleep(0.3)  # kq reads the ring buffer every 50 ms
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    err = "".join(l for l in (seen + err.splitlines(True)) if not l.startswith("libbpf:"))
    return proc.returncode, out, err


def build(script_text, name, *extra):
    script = harness.write_file(WORKDIR, name + ".kq", script_text)
    status, _, err = kq("build", *extra, script, "-o", path(name + ".o"))
    if status != 0:
        raise AssertionError(f"kq build failed: {err}")
    return script, path(name + ".o")


def edit_plan(obj, old, new, after=b""):
    """Rewrites the first `old` after `after` in the object's plan (same length)."""
    assert len(old) == len(new)
    with open(obj, "rb") as f:
        data = f.read()
    start = data.index(b'{\n "format"')
    at = data.index(old, data.index(after, start) if after else start)
    edited = path("edited.o")
    with open(edited, "wb") as f:
        f.write(data[:at] + new + data[at + len(old):])
    return edited


def rewrite_plan(obj, edit):
    """A copy of the object whose `.kq.plan` section is its plan (JSON) after `edit(plan)`:
    the new plan is appended to the file and the section's header pointed at it."""
    with open(obj, "rb") as f:
        data = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        at = shoff + i * shentsize
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data, at)
        return at, name, offset, size

    _, _, names_offset, _ = header(shstrndx)
    for i in range(shnum):
        at, name, offset, size = header(i)
        end = data.index(b"\0", names_offset + name)
        if data[names_offset + name:end] == b".kq.plan":
            plan = json.loads(data[offset:offset + size])
            edit(plan)
            text = json.dumps(plan, indent=1).encode()
            struct.pack_into("<QQ", data, at + 24, len(data), len(text))
            edited = path("rewritten.o")
            with open(edited, "wb") as f:
                f.write(data + text)
            return edited
    raise AssertionError("no .kq.plan section")


@unittest.skipIf(harness.skip_reason() is not None, harness.skip_reason() or "")
class Objects(harness.KqTestCase):
    def test_events_print_as_the_script_prints_them(self):
        script, obj = build(OPENS, "opens")
        results = [traced(script), traced("run", obj)]
        for status, out, err in results:
            self.assertEqual(status, 0, err)
            lines = out.splitlines()
            rows = [l.split()[-3:] for l in lines[1:]]
            self.assertEqual([r[:2] for r in rows], [["kqobjwork", "/etc/hostname"]] * 3 +
                             [["kqobjwork", "/etc/passwd"]] * 2, out)
            self.assertTrue(all(int(r[2]) >= 0 for r in rows), out)
            self.assertRegex(err, r"kq: \d+ events, 0 lost")
        self.assertEqual(results[0][1].splitlines()[0].split(), results[1][1].splitlines()[0].split())

    def test_json_events(self):
        _, obj = build(OPENS, "opens_json")
        status, out, err = traced("run", obj, "-f", "json")
        self.assertEqual(status, 0, err)
        events = [json.loads(l) for l in out.splitlines() if not l.startswith('{"summary"')]
        self.assertEqual([e["path"] for e in events], ["/etc/hostname"] * 3 + ["/etc/passwd"] * 2)
        self.assertEqual(set(events[0]), {"time", "time_ns", "cpu", "pid", "tid", "comm", "probe",
                                          "path", "fd"})

    def test_a_group_by_table(self):
        script, obj = build(COUNTS, "counts")
        tables = []
        for args in ([script], ["run", obj]):
            status, out, err = traced("-f", "json", *args)
            self.assertEqual(status, 0, err)
            tables_printed = [json.loads(l) for l in out.splitlines() if '"rows"' in l]
            self.assertEqual(len(tables_printed), 1, out)
            tables.append(sorted((r["path"], r["opens"]) for r in tables_printed[0]["rows"]))
        self.assertEqual(tables[0], [("/etc/hostname", 3), ("/etc/passwd", 2)])
        self.assertEqual(tables[1], tables[0])

    def test_a_join(self):
        script, obj = build(SLEEPS, "sleeps")
        for args in ([script], ["run", obj]):
            status, out, err = traced("-f", "json", *args)
            self.assertEqual(status, 0, err)
            rows = [json.loads(l) for l in out.splitlines() if not l.startswith('{"summary"')]
            self.assertEqual(len(rows), 5, out)
            self.assertTrue(all(r["s.comm"] == "kqobjwork" and r["usecs"] >= 20000 for r in rows), out)

    def test_limit_and_duration_are_kept(self):
        _, obj = build(OPENS.rstrip() + " limit 2\n", "limited")
        status, out, err = traced("run", obj)
        self.assertEqual(status, 0, err)
        self.assertEqual(len(out.splitlines()), 3, out)  # the header and 2 rows
        start = time.monotonic()
        status, _, err = kq("run", obj, "-d", "300ms")
        self.assertEqual(status, 0, err)
        self.assertLess(time.monotonic() - start, 10)

    def test_a_keyless_table_prints_as_the_script_prints_it(self):
        # Nothing calls vhangup(2): the table's one group never counts, and says so.
        script, obj = build("trace tracepoint:syscalls:sys_enter_vhangup select count()\n", "keyless")
        for args in ([script], ["run", obj]):
            status, out, err = kq(*args, "-d", "1s")
            self.assertEqual(status, 0, err)
            self.assertEqual([l.strip() for l in out.splitlines() if l.strip()],
                             ["count()", "(no events)"], (args, out))

    def test_an_edited_plan_is_refused_naming_its_field(self):
        _, obj = build('trace syscall:getpid where comm == "kqobjwork" select count(), sum(pid)\n'
                       'trace tracepoint:sched:sched_switch select prev->pid limit 1\n', "edited")
        edits = [
            (lambda p: p["aggregates"][0].update(per_cpu=False),
             "aggregates[0].per_cpu is false but map `agg_0` is a per-CPU array"),
            (lambda p: p["programs"][-1].update(method=2**64 - 1),
             f"].method is {2**64 - 1}, more than a u32 holds"),
            (lambda p: p["probes"][-1]["fields"][0].update(offset=4096),
             "lies outside its"),
            (lambda p: p["aggregates"][0].update(value_size=8),
             "aggregates[0].slots[1] (`sum(pid)`) lies outside its 8-byte value"),
            (lambda p: p["programs"][0].update(function="kq_nothing"),
             "programs[0].function is `kq_nothing`, which is not a program of the object"),
            (lambda p: p.update(format=1), "this kq reads format 6: build it again with this kq"),
        ]
        for edit, message in edits:
            edited = rewrite_plan(obj, edit)
            status, out, err = kq("run", edited, "-d", "1s")
            self.assertEqual(status, 1, err)
            self.assertIn(message, err)
            self.assertTrue(err.startswith(f"kq: error: cannot run `{edited}`: "), err)
            self.assertEqual(out, "")

    def test_what_is_not_a_file_is_refused_at_once(self):
        fifo = path("fifo.o")
        os.mkfifo(fifo)
        for target, why in [(fifo, "it is a FIFO, not a file"), (WORKDIR, "it is a directory")]:
            status, _, err = kq("run", target, timeout=10)
            self.assertEqual(status, 1, err)
            self.assertEqual(err, f"kq: error: cannot run `{target}`: {why}\n")

    def test_a_tracepoint_record_laid_out_differently_is_refused(self):
        _, obj = build(OPENS, "moved")
        edited = edit_plan(obj, b'"offset": 24', b'"offset": 28', after=b'"tracepoints"')
        status, _, err = kq("run", edited)
        self.assertEqual(status, 1, err)
        self.assertIn("tracepoint `syscalls:sys_enter_openat` has field `filename` at offset 24 "
                      "(8 bytes) here, but at offset 28 (8 bytes) where the object was built", err)
        self.assertIn("classic tracepoint records are not relocated", err)
        self.assertRegex(err, r"was built by kq \S+ against Linux \S+ \(\w+\); this is Linux")

    def test_a_missing_tracepoint_is_named(self):
        _, obj = build(OPENS, "missing")
        edited = edit_plan(obj, b"sys_enter_openat", b"sys_enter_openaX", after=b'"tracepoints"')
        status, _, err = kq("run", edited)
        self.assertEqual(status, 1, err)
        self.assertIn("it attaches to tracepoint `syscalls:sys_enter_openaX`, which this kernel "
                      "cannot give", err)

    def test_a_member_this_kernel_lacks_is_named(self):
        # Built against a BTF whose `mark` members are called `marx`: its CO-RE relocation
        # finds no `marx` in this kernel's sk_buff.
        with open("/sys/kernel/btf/vmlinux", "rb") as f:
            btf = f.read()
        self.assertEqual(btf.count(b"\0mark\0"), 1)
        other = path("other.btf")
        with open(other, "wb") as f:
            f.write(btf.replace(b"\0mark\0", b"\0marx\0"))
        _, obj = build("trace tracepoint:net:net_dev_xmit(skb) select skb->marx\n", "marx",
                       "--btf", other)
        status, out, err = kq("run", obj, "-d", "2s")
        self.assertEqual(status, 1, err)
        self.assertIn("a kernel type it reads is not in this kernel (libbpf: failed to resolve "
                      "CO-RE relocation", err)
        self.assertIn("marx", err)
        self.assertIn(f"against the BTF file `{other}`", err)


if __name__ == "__main__":
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
