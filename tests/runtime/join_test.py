#!/usr/bin/env python3
"""Joins across probes on the running kernel, against workloads whose answer is known:
sleeps of a known length, direct writes of a known count, more waiting events than a join
holds. Usage: join_test.py PATH_TO_KQ"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import kq

WORKDIR = tempfile.mkdtemp(prefix="kq-join-", dir="/var/tmp")  # on a disk, not tmpfs


def script(name, body):
    return harness.write_file(WORKDIR, name, body)


# Names itself (comm) and sleeps 5 x 20 ms.
SLEEPER = script("sleeper.py", """
import ctypes, time
ctypes.CDLL(None).prctl(15, b"kqsleeper", 0, 0, 0)
for _ in range(5):
    time.sleep(0.02)
""")

# Names itself, then makes 20000 getppid calls: more than a join holds.
CALLER = script("caller.py", """
import ctypes, os
ctypes.CDLL(None).prctl(15, b"kqcaller", 0, 0, 0)
for _ in range(20000):
    os.getppid()
""")

# One getpid, then close(999) and close(1000) (both fail: nothing is open there).
CLOSER = script("closer.py", """
import ctypes, os
libc = ctypes.CDLL(None)
os.getpid()
libc.close(999)
libc.close(1000)
""")

SLEEP_JOIN = ("trace tracepoint:syscalls:sys_exit_clock_nanosleep "
              "join tracepoint:syscalls:sys_enter_clock_nanosleep as s on tid ")


def summary_counts(err, name):
    line = next((l for l in err.splitlines() if l.startswith(f"kq: join {name}:")), "")
    return {what: int(n) for n, what in re.findall(r"(\d+) (kept|matched|without a match|older|evicted|still waiting)", line)}


@unittest.skipIf(harness.skip_reason() is not None, harness.skip_reason() or "")
class Joins(harness.KqTestCase):
    def test_sleeps_join_their_own_entry(self):
        status, out, err = kq("-f", "json", SLEEP_JOIN + "where comm == \"kqsleeper\" "
                              "select (time - s.time) / 1000 as usecs, s.comm",
                              "-c", f"python3 {SLEEPER}")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(rows), 5, out)
        for row in rows:
            self.assertEqual(row["s.comm"], "kqsleeper")
            self.assertGreaterEqual(row["usecs"], 20000, row)
            self.assertLess(row["usecs"], 32000, row)
        summary = json.loads(err.strip().splitlines()[-1])["summary"]
        join = summary["joins"][0]
        self.assertEqual(join["name"], "s")
        self.assertEqual(join["matched"], 5, summary)

    def test_a_fn_of_a_joined_value_runs_at_the_querys_event(self):
        # Only the argument reads through `s.`: `time` in the body is the exit's, so each
        # latency is the 20 ms sleep, where the whole call was once kept at the entry (0).
        # A body reading nothing but its parameter is kept whole, as before.
        status, out, err = kq("-f", "json", "fn lat_us(t) = (time - t) / 1000\n"
                              "fn us(t) = t / 1000\n" + SLEEP_JOIN + "where comm == \"kqsleeper\" "
                              "select lat_us(s.time) as lat, us(s.time) as at, time / 1000 as now",
                              "-c", f"python3 {SLEEPER}")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(rows), 5, out)
        for row in rows:
            self.assertGreaterEqual(row["lat"], 20000, row)
            self.assertLess(row["lat"], 32000, row)
            self.assertAlmostEqual(row["now"] - row["at"], row["lat"], delta=1)

    def test_an_event_the_where_rejects_is_not_one_without_a_match(self):
        # The join keeps kqsleeper's entries only; the shell's and sleep's exits have none,
        # and the query's `where` rejects them: no event went without its match.
        status, out, err = kq("trace tracepoint:syscalls:sys_exit_clock_nanosleep join "
                              "tracepoint:syscalls:sys_enter_clock_nanosleep as s where comm == \"kqsleeper\" "
                              "on tid where comm == \"kqsleeper\" select count()",
                              "-c", f"sh -c 'sleep 0.05; python3 {SLEEPER}'")
        self.assertEqual(status, 0, err)
        counts = summary_counts(err, "s")
        self.assertEqual((counts.get("matched"), counts.get("without a match", 0)), (5, 0), err)

    def test_a_where_on_joined_values_alone(self):
        # dd reads its standard input 7 times (and other files as it starts): the query's
        # `where` reads only what the join kept of each read's entry, alone and combined.
        for where in ("s.fd == 0", "s.fd == 0 and s.count > 0"):
            status, out, err = kq("-f", "json", "trace tracepoint:syscalls:sys_exit_read join "
                                  "tracepoint:syscalls:sys_enter_read as s on tid "
                                  f"where comm == \"dd\" and {where} select count()",
                                  "-c", "sh -c 'dd bs=1 count=7 status=none < /dev/zero > /dev/null'")
            self.assertEqual(status, 0, err)
            rows = [row for line in out.splitlines() if '"rows"' in line for row in json.loads(line)["rows"]]
            self.assertEqual(rows, [{"count()": 7}], (where, out, err))

    def test_sleep_latency_histogram(self):
        status, out, err = kq(SLEEP_JOIN + "where comm == \"kqsleeper\" select count(), hist(time - s.time)",
                              "-c", f"python3 {SLEEPER}")
        self.assertEqual(status, 0, err)
        # 20 ms is in [2^24, 2^25) ns: all five there, and nowhere else.
        self.assertRegex(out, r"hist\(time - s.time\) \(ns\):\n  \[16M, 32M\)\s+5 \|@+\|")
        buckets = re.findall(r"^\s+\[[^)]*\)\s+(\d+) \|", out, re.M)
        self.assertEqual(sum(int(n) for n in buckets), 5, out)
        self.assertEqual(summary_counts(err, "s").get("matched"), 5, err)

    def test_within_drops_older_matches(self):
        status, out, err = kq(SLEEP_JOIN + "within 1ms where comm == \"kqsleeper\" select time - s.time",
                              "-c", f"python3 {SLEEPER}")
        self.assertEqual(status, 0, err)
        self.assertEqual(out.splitlines()[1:], [], out)
        counts = summary_counts(err, "s")
        self.assertEqual(counts.get("matched"), 0, err)
        self.assertEqual(counts.get("older"), 5, err)

    def test_direct_writes_make_one_row_each(self):
        # biolatency: block I/O issue -> completion, joined on the request.
        dd = os.path.join(WORKDIR, "kqdd")
        shutil.copy("/bin/dd", dd)
        target = os.path.join(WORKDIR, "data")
        subprocess.run(["fallocate", "-l", "80K", target], check=True)
        subprocess.run(["sync"], check=True)
        proc = subprocess.Popen([harness.KQ, "-f", "json",
                                 "trace tracepoint:block:block_rq_complete(rq, nr_bytes) "
                                 # Writes only (REQ_OP_WRITE): dd's exec may read a page.
                                 "join tracepoint:block:block_rq_issue(rq) as issue "
                                 "where comm == \"kqdd\" and (rq->cmd_flags & 0xff) == 1 on rq "
                                 "select nr_bytes, issue.comm, (time - issue.time) as ns for 4s"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)  # attached (kq prints nothing before its first JSON row)
        subprocess.run([dd, "if=/dev/zero", f"of={target}", "bs=4k", "count=20", "oflag=direct",
                        "conv=notrunc"], check=True, capture_output=True)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        rows = [json.loads(line) for line in out.decode().splitlines()]
        self.assertEqual(len(rows), 20, rows)
        for row in rows:
            self.assertEqual(row["nr_bytes"], 4096, row)
            self.assertEqual(row["issue.comm"], "kqdd", row)
            self.assertGreater(row["ns"], 0, row)

    def test_evictions_are_counted(self):
        # Keyed by time, nothing ever matches: 20000 kept events in a join that holds fewer.
        status, out, err = kq("trace syscall:getpid join syscall:getppid as g where comm == \"kqcaller\" "
                              "on time select g.time", "-c", f"python3 {CALLER}")
        self.assertEqual(status, 0, err)
        counts = summary_counts(err, "g")
        self.assertEqual(counts.get("kept"), 20000, err)
        self.assertGreater(counts.get("evicted", 0), 0, err)
        self.assertEqual(counts.get("evicted", 0) + counts.get("still waiting", 0), 20000, err)
        self.assertIn("more were waiting than the join holds", err)

    def test_where_that_fails_leaves_the_entry_waiting(self):
        # close(999) finds the getpid but its `where` fails: close(1000) still finds it.
        status, out, err = kq("-f", "json", "trace syscall:close(fd) join syscall:getpid as g on tid "
                              "where fd == 1000 select fd, g.time > 0 as found",
                              "-c", f"python3 {CLOSER}")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines()]
        self.assertEqual([(r["fd"], r["found"]) for r in rows], [(1000, True)], out)

    def test_a_kept_join_is_read_by_every_row(self):
        # `keep`: the one getpid is read by both closes (each a row), and by neither without.
        query = "trace syscall:close(fd) join syscall:getpid as g{} on tid select fd, g.time > 0 as found"
        status, out, err = kq("-f", "json", query.format(" keep"), "-c", f"python3 {CLOSER}")
        self.assertEqual(status, 0, err)
        rows = [(r["fd"], r["found"]) for r in map(json.loads, out.splitlines())]
        self.assertEqual([row for row in rows if row[0] in (999, 1000)], [(999, True), (1000, True)], out)
        [join] = next(json.loads(l) for l in err.splitlines() if l.startswith('{"summary"'))["summary"]["joins"]
        self.assertEqual((join["matched"], join["waiting"]), (2, join["kept"]), err)  # none used up
        status, out, err = kq("-f", "json", query.format(""), "-c", f"python3 {CLOSER}")
        self.assertEqual(status, 0, err)
        rows = [(r["fd"], r["found"]) for r in map(json.loads, out.splitlines())]
        self.assertEqual([row for row in rows if row[0] in (999, 1000)], [(999, True)], out)

    def test_joins_chain(self):
        # Two joins on one query: each row needs both, each consumed once; both kept the same
        # syscall entry (each program reads the clock itself: close, not equal).
        status, out, err = kq(SLEEP_JOIN + "join tracepoint:syscalls:sys_enter_clock_nanosleep as t on tid "
                              "where comm == \"kqsleeper\" "
                              "select (s.time > t.time ? s.time - t.time : t.time - s.time) < 1000000 as close",
                              "-c", f"python3 {SLEEPER}")
        self.assertEqual(status, 0, err)
        rows = out.splitlines()[1:]
        self.assertEqual(len(rows), 5, out)
        self.assertTrue(all(r.rstrip().endswith(" true") for r in rows), out)
        self.assertEqual(summary_counts(err, "t").get("matched"), 5, err)


if __name__ == "__main__":
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
