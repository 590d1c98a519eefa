"""The examples of disks and CPUs: block requests, writeback, run queues."""
import os
import re
import subprocess
import time


from examples_support import (PYTHON, WORKDIR, ExampleTestCase, KqSession, bpftrace_histograms, bpftrace_rows,
                              example, facts, run_kq, traced, workload)


class DiskAndCpuExamples(ExampleTestCase):
    """bitesize, biosnoop, biolatency, writeback, runqlat, runqlen."""

    def direct_writes(self, comm):
        """A workload that names itself `comm` and writes a file with O_DIRECT, to blocks it
        already has: one block request per write, of the write's size: 8 of 4 KiB, 3 of 64 KiB."""
        target = os.path.join(WORKDIR, comm + ".data")
        with open(target, "wb") as f:
            f.write(b"y" * (1 << 20))
            os.fsync(f.fileno())
        return workload(comm, f"""
import mmap
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"x" * (1 << 20))
fd = os.open({target!r}, os.O_RDWR | os.O_DIRECT)
for i in range(8):
    os.pwrite(fd, memoryview(buf)[:4096], i * 4096)
for i in range(3):
    os.pwrite(fd, memoryview(buf)[:65536], 65536 * (i + 1))
os.close(fd)
""")

    def test_bitesize(self):
        path = self.direct_writes("kqex-bitesize")
        bt = self.bpftrace("bitesize")
        (table,) = traced("bitesize", path)
        rows = {r["comm"]: {b["lo"]: b["count"] for b in r["bytes"] if b["count"]} for r in table["rows"]}
        self.assertEqual(rows.get("kqex-bitesize"), {4096: 8, 65536: 3}, table)

        def check(output):
            self.assertEqual(bpftrace_histograms(output).get("kqex-bitesize"), rows["kqex-bitesize"], output)
        self.compare(bt, check)

    def test_biosnoop(self):
        path = self.direct_writes("kqex-biosnoop")
        kq = self.kq_session("biosnoop")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)  # the last completions
        # The workload's writes; it may also read file-system metadata (an inode's block), as
        # REQ_OP_READ with REQ_META.
        mine = [e for e in kq.events() if e.get("issuer") == "kqex-biosnoop" and e["op"] == "REQ_OP_WRITE"]
        disk = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(os.stat(WORKDIR).st_dev)}:"
                                                  f"{os.minor(os.stat(WORKDIR).st_dev)}"))
        self.assertEqual(sorted(e["bytes"] for e in mine), [4096] * 8 + [65536] * 3, mine)
        self.assertEqual({e["disk"] for e in mine}, {disk}, mine)
        self.assertTrue(all(re.fullmatch(r"\d+\.\d{3}", e["lat_ms"]) for e in mine), mine)

    def test_biolatency(self):
        path = self.direct_writes("kqex-biolatency")
        kq = self.kq_session("biolatency")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)
        (table,) = kq.events()
        (row,) = table["rows"]
        # Every request of the machine is in it: at least the workload's 11.
        self.assertGreaterEqual(sum(b["count"] for b in row["usecs"]), 11, table)
        self.not_comparable("biolatency", "it sums every block request of the machine in one histogram")

    def test_writeback(self):
        # Dirty pages, then syncfs(): the flusher writes them back, for reason `sync`, on the
        # device of the workload's file system.
        target = os.path.join(WORKDIR, "dirty")
        path = workload("kqex-writeback", f"""
fd = os.open({target!r}, os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"x" * (1 << 20))
libc.syncfs(fd)
""")
        device = f"{os.major(os.stat(WORKDIR).st_dev)}:{os.minor(os.stat(WORKDIR).st_dev)}"
        bt = self.bpftrace("writeback")
        kq = self.kq_session("writeback")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        time.sleep(0.2)
        events = kq.events()
        self.assertIn((device, "WB_REASON_SYNC"), {(e["device"], e["reason"]) for e in events}, events[-20:])
        self.assertTrue(all(re.fullmatch(r"\d+\.\d{3}", e["ms"]) for e in events), events[-20:])

        def check(output):
            rows = bpftrace_rows(output, r"\S+\s+(\S+)\s+\d+\s+(\S+)\s+\d+\.\d+$")
            self.assertIn((device, "sync"), set(rows), output[-3000:])
        self.compare(bt, check)

    def test_runqlat(self):
        # Pinned to one CPU: a spinner, a sleeper, and the workload itself, which becomes a
        # real-time task spinning 250 ms while the sleeper wakes after 50 ms (then waits about
        # 200 ms) and the spinner, preempted, waits about 250 ms.
        path = workload("kqex-runqlat", """
cpu = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
spinner = os.fork()
if spinner == 0:
    spin(0.6)
    os._exit(0)
r, w = os.pipe()
sleeper = os.fork()
if sleeper == 0:
    os.write(w, b"x")
    time.sleep(0.05)
    os._exit(0)
os.read(r, 1)
while open(f"/proc/{sleeper}/stat").read().rsplit(")", 1)[1].split()[0] != "S":
    time.sleep(0.001)  # until the sleeper sleeps
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
spin(0.25)
os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
os.waitpid(spinner, 0)
os.waitpid(sleeper, 0)
""")
        kq = self.kq_session("runqlat")
        subprocess.run([PYTHON, path], check=True, timeout=60)
        (table,) = kq.events()
        usecs = table["rows"][0]["usecs"]
        # The sleeper (woken, ~200 ms) and the spinner (preempted, ~250 ms), in one histogram.
        self.assertGreaterEqual(sum(b["count"] for b in usecs if (b["lo"] or 0) >= 131072), 2, usecs)
        self.not_comparable("runqlat", "it sums every run queue wait of the machine in one histogram")

    def test_runqlat_is_the_sum_of_its_sources(self):
        # The workload's own waits, counted by the example's one join of three sources and, in
        # the same session, by a join of each source alone: a task waits for one reason at a
        # time, so the one histogram counts what the three do (sleeps, forks, preemptions).
        path = workload("kqex-rqsum", """
cpu = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
for _ in range(20):
    time.sleep(0.002)
children = [os.fork() for _ in range(1)]
if 0 in children:
    os._exit(0)
for c in children:
    os.waitpid(c, 0)
end = time.monotonic() + 0.3
while time.monotonic() < end:
    pass
""")
        # Every source and the query keep to the workload's own task (by its name), so no
        # wait is left from before it named itself.
        mine = 'comm == "kqex-rqsum"'
        sources = [("sched_wakeup(p)", "p", ""), ("sched_wakeup_new(p)", "p", ""),
                   ("sched_switch(prev)", "prev", "(preempt or prev_state == 0) and prev->pid != 0 and ")]
        combined = "trace tracepoint:sched:sched_switch(next)\n"
        for source, arg, where in sources:
            combined += (f"  join tracepoint:sched:{source} as queued where {where}{arg}->{mine}\n"
                         f"    on queued.{arg}->pid == next->pid\n")
        combined += f"  where next->{mine} select count(), hist((time - queued.time) / 1000) as usecs\n"
        script = os.path.join(WORKDIR, "runqlat_sources.kq")
        with open(script, "w") as f:
            f.write(combined)
            for source, arg, where in sources:
                f.write(f"\ntrace tracepoint:sched:sched_switch(next)\n"
                        f"  join tracepoint:sched:{source} as q where {where}{arg}->{mine} on q.{arg}->pid == next->pid\n"
                        f"  where next->{mine} select count()\n")
        # System-wide, as the example runs: the query's filter is the switched-in task's name.
        session = KqSession(script[:-3])
        subprocess.run([PYTHON, path], check=True, timeout=60)
        events = session.events()
        # A source with no waits (the spinner need not be preempted) is a table of no rows.
        counts = {t["query"]: t["rows"][0]["count()"] if t["rows"] else 0 for t in events if "rows" in t}
        # A wait replaced before it ended (a task preempted as it went to sleep, then woken
        # while still queued) is one wait in one map and two in two: rare, and never the
        # other way round.
        self.assertIn(counts[2] + counts[3] + counts[4] - counts[1], range(0, 3), counts)
        self.assertGreaterEqual(counts[2], 20, counts)  # each sleep ends in a wakeup
        self.assertGreaterEqual(counts[3], 1, counts)   # the fork

    def test_cpuwalk(self):
        # A process spinning for a second on one CPU: about 99 samples, all of that CPU.
        path = workload("kqex-cpuwalk", """
cpu = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
report(cpu=cpu)
end = time.monotonic() + 1.0
while time.monotonic() < end:
    pass
""")
        (table,) = traced("cpuwalk", path)
        samples = {b["lo"]: b["count"] for b in table["rows"][0]["cpu"] if b["count"]}
        # The start, before the workload pins itself, may be sampled elsewhere.
        cpu = facts(path)["cpu"]
        self.assertIn(samples.get(cpu, 0), range(30, 140), samples)  # fewer when others share it
        self.assertGreaterEqual(samples.get(cpu, 0), 0.8 * sum(samples.values()), samples)
        self.not_comparable("cpuwalk", "it samples every process of the machine")

    def test_loads(self):
        # The three load averages of /proc/loadavg, once a second, after the header line.
        events = run_kq("loads", "-d", "2500ms")
        lines = [e["loads"] for e in events if "loads" in e]
        self.assertEqual(lines[0], "Reading load averages... Hit Ctrl-C to end.")
        self.assertIn(len(lines), (2, 3, 4), lines)  # an interval's first tick is a second after the start
        for line in lines[1:]:
            self.assertRegex(line, r"^load averages: \d+\.\d\d \d+\.\d\d \d+\.\d\d ")
        self.not_comparable("loads", "its values are the whole machine's")

    def test_runqlen(self):
        # Three processes spinning for a second on one CPU: whichever runs has (at least) two
        # waiting.
        path = workload("kqex-runqlen", """
cpu = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
spinners = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pass
        os._exit(0)
    spinners.append(pid)
for pid in spinners:
    os.waitpid(pid, 0)
""")
        (table,) = traced("runqlen", path)
        samples = {b["lo"]: b["count"] for b in table["rows"][0]["runqlen"] if b["count"]}
        # About 99 samples of the CPU (fewer when others share it), nearly all while a spinner
        # ran with the two others waiting (more, when others share the CPU).
        behind_two = sum(n for waiting, n in samples.items() if waiting >= 2)
        self.assertGreaterEqual(sum(samples.values()), 30, samples)
        self.assertGreaterEqual(behind_two, 0.8 * sum(samples.values()), samples)
        self.not_comparable("runqlen", "it samples every CPU of the machine in one histogram")
