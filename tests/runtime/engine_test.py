#!/usr/bin/env python3
"""Runtime tests of the engine (engine/): each query's losses counted apart, the stop
signals read from a signalfd (and what they must still stop: a slow or gone reader, the -c
command), and user stacks named from the program a process runs now, with bounded caches.
They need root, a kernel with BTF and gcc; without them they are skipped with the reason.

Usage: engine_test.py PATH_TO_KQ
"""
import atexit
import ctypes
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time
import unittest

import harness
from harness import kq, loaded_kq_programs, query_rows, skip_reason

WORKDIR = tempfile.mkdtemp(prefix="kq-engine-")
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)
SUMMARY = re.compile(r"^kq: (\d+) events?, (\d+) lost", re.M)
QUERY_LINE = re.compile(r"^kq: query (\d+): (\d+) events?(?:, (\d+) lost)?", re.M)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE)


def build_c(name, source):
    """Compiles `source` into WORKDIR/name (frame pointers kept, for ustack); its path."""
    if shutil.which("gcc") is None:
        raise unittest.SkipTest("needs gcc to build the workload programs")
    path = os.path.join(WORKDIR, name)
    if not os.path.exists(path):
        c = harness.write_file(WORKDIR, name + ".c", source)
        subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", "-o", path, c], check=True)
    return path


# Calls getpid (FLOOD) or getppid (QUIET) argv[1] times: comm names their events.
SYSCALL_LOOP = """
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1;
  for (long i = 0; i < n; i++) syscall(%s);
  return 0;
}
"""


def signal_mask(pid, field):
    """The set of signal numbers in /proc/PID/status's `field` (SigBlk, SigIgn, SigCgt)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                bits = int(line.split()[1], 16)
                return {n for n in range(1, 65) if bits & (1 << (n - 1))}
    return set()


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


def assert_nothing_loaded(test):
    """Between two runs of one test: what the first loaded is gone (as tearDown checks)."""
    if loaded_kq_programs() is None:
        return
    deadline = time.monotonic() + 5
    while loaded_kq_programs() and time.monotonic() < deadline:
        time.sleep(0.1)
    test.assertEqual(loaded_kq_programs(), [], "kq left BPF programs loaded")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class PerQueryStats(harness.KqTestCase):
    """Guards the per-query `lost` counters: with one shared counter (the old map, or an
    engine that reads query 0's slot for every query), the losses land on the wrong query or
    on all of them, and the per-query lines and the JSON `queries` go wrong or missing."""

    QUIET_EVENTS = 7

    def setUp(self):
        super().setUp()
        self.flood = build_c("kqflood", SYSCALL_LOOP % "SYS_getpid")
        self.quiet = build_c("kqquiet", SYSCALL_LOOP % "SYS_getppid")

    def run_two(self, flood_first, *args):
        """Runs a flooding query and a quiet one (in that order or the other) with a 4 KiB
        ring. The quiet program runs first, while the ring is empty: none of its events may
        be lost, so all losses are the flood's."""
        flood = 'trace tracepoint:syscalls:sys_enter_getpid where comm == "kqflood" select pid'
        quiet = 'trace tracepoint:syscalls:sys_enter_getppid where comm == "kqquiet" select pid'
        queries = [flood, quiet] if flood_first else [quiet, flood]
        script = harness.write_file(WORKDIR, "two.kq", "\n".join(queries) + "\n")
        status, out, err = kq("--buffer-size", "4k", *args, script,
                              "-c", f"{self.quiet} {self.QUIET_EVENTS} && {self.flood} 300000", timeout=120)
        self.assertEqual(status, 0, err)
        return out, err

    def test_text_summary_says_which_query_lost(self):
        # The flood is query 2: an engine that gave every loss to query 0 fails here.
        out, err = self.run_two(flood_first=False)
        total = SUMMARY.search(err)
        self.assertTrue(total, err)
        lines = {int(m.group(1)): m for m in QUERY_LINE.finditer(err)}
        self.assertEqual(set(lines), {2}, f"only the flooding query lost events:\n{err}")
        flood_events, flood_lost = int(lines[2].group(2)), int(lines[2].group(3) or 0)
        self.assertGreater(flood_lost, 0, err)
        self.assertEqual(len(query_rows(out, 1)), self.QUIET_EVENTS, err)
        self.assertEqual(len(query_rows(out, 2)), flood_events, err)
        self.assertEqual(int(total.group(1)), self.QUIET_EVENTS + flood_events, err)
        self.assertEqual(int(total.group(2)), flood_lost, err)

    def test_json_summary_has_each_querys_losses(self):
        # The flood is query 1 here, 2 in the text test: each order is checked once.
        out, err = self.run_two(True, "-f", "json")
        summary = json.loads(err.strip().splitlines()[-1])["summary"]
        queries = summary["queries"]
        self.assertEqual([q["query"] for q in queries], [1, 2], summary)
        self.assertGreater(queries[0]["lost"], 0, summary)
        self.assertEqual(queries[1]["lost"], 0, summary)
        self.assertEqual(queries[1]["events"], self.QUIET_EVENTS, summary)
        events = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(sum(e["query"] == 1 for e in events), queries[0]["events"], summary)
        for key in ("events", "lost", "not_counted", "entries_not_kept", "exits_without_entry"):
            self.assertEqual(summary[key], sum(q[key] for q in queries), key)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class StopSignals(harness.KqTestCase):
    """The stop signals arrive through a signalfd read by a thread: they must still end a
    session promptly whatever its main thread is waiting in (epoll, a write to a pipe, the
    compiler), and a command kq starts must not inherit them blocked."""

    TRACE = "trace tracepoint:sched:sched_switch select cpu"

    def test_sigint_and_sigterm_wake_a_waiting_session(self):
        # Guards the wake-up: a signal the signalfd thread reads but that does not wake the
        # session's epoll (its cancellation eventfd) waits for the next event or for the
        # wait's 1 s timeout, 0.8 s after the signal here; woken, kq ends in about 0.1 s.
        # A rarely hit tracepoint, so that nothing else wakes the session.
        for sig in (signal.SIGINT, signal.SIGTERM):
            proc = subprocess.Popen([harness.KQ, "trace tracepoint:syscalls:sys_enter_getppid "
                                     'where comm == "kqnobody" select pid'],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                self.assertTrue(proc.stdout.readline().startswith(b"TIME"))  # attached
                if loaded_kq_programs() is not None:
                    self.assertTrue(loaded_kq_programs(), "nothing was loaded while kq ran")
                time.sleep(0.2)  # into its wait
                start = time.monotonic()
                proc.send_signal(sig)
                proc.wait(timeout=10)
                latency = time.monotonic() - start
                err = proc.stderr.read().decode()
            finally:
                proc.kill()
                proc.wait()
                proc.stdout.close()
                proc.stderr.close()
            print(f"\n  stop latency of {signal.Signals(sig).name}: {latency * 1000:.0f} ms", file=sys.stderr)
            self.assertEqual(proc.returncode, 0, err)
            self.assertRegex(err, SUMMARY)
            self.assertLess(latency, 0.5, f"{signal.Signals(sig).name} took {latency:.2f} s")
            assert_nothing_loaded(self)

    def test_a_signal_while_compiling_ends_the_session_as_it_begins(self):
        # Guards the stop requested before the session: the signal must be taken (blocked
        # for the signalfd, or caught) from before compiling, not kill kq or wait for it to
        # be re-sent, and the -c command must never run.
        for attempt in range(3):
            marker = os.path.join(WORKDIR, f"ran-{attempt}")
            start = time.monotonic()
            proc = subprocess.Popen([harness.KQ, self.TRACE, "-c", f"touch {marker}"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                # The first moment kq takes SIGINT, well before it has compiled and loaded.
                wait_for(lambda: signal.SIGINT in signal_mask(proc.pid, "SigBlk") | signal_mask(proc.pid, "SigCgt"),
                         10, "kq to take SIGINT")
                taken = time.monotonic() - start
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=10)
                err = err.decode()
            finally:
                proc.kill()
                proc.wait()
            # Stopped before the session began, kq says in which phase and exits 130 (the
            # documented status of a stop while compiling or attaching); stopped as the
            # session begins, it ends the session as usual.
            if proc.returncode == 130:
                self.assertRegex(err, r"kq: stopped (while compiling|while attaching|before anything was loaded)")
            else:
                self.assertEqual(proc.returncode, 0, err)
                self.assertRegex(err, SUMMARY)
            self.assertLess(time.monotonic() - start, 5, err)
            self.assertFalse(os.path.exists(marker), f"the command ran (SIGINT taken after {taken:.3f} s)")
            assert_nothing_loaded(self)

    def test_a_reader_that_exits_ends_kq_quietly(self):
        # `kq ... | head -n 3`: once head is gone kq's next write fails with EPIPE (SIGPIPE
        # is one of the stop signals kq blocks, so it does not kill kq). A reader that took
        # what it wanted is no error: kq detaches and ends at once, says nothing, and exits 0,
        # as `grep ... | head` does. Fails if SIGPIPE is not blocked (kq dies by it).
        kq_proc = subprocess.Popen([harness.KQ, self.TRACE], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        head = subprocess.Popen(["head", "-n", "3"], stdin=kq_proc.stdout, stdout=subprocess.PIPE)
        kq_proc.stdout.close()  # head holds the only reading end
        try:
            lines = head.stdout.read().decode().splitlines()
            head.wait(timeout=30)
            gone = time.monotonic()
            kq_proc.wait(timeout=10)
            latency = time.monotonic() - gone
            err = kq_proc.stderr.read().decode()
        finally:
            for p in (kq_proc, head):
                p.kill()
                p.wait()
            kq_proc.stderr.close()
            head.stdout.close()
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[0].startswith("TIME"), lines)
        self.assertEqual(kq_proc.returncode, 0, err)
        self.assertNotIn("Broken pipe", err)
        self.assertNotRegex(err, SUMMARY)
        self.assertLess(latency, 2.0)

    def test_sigint_ends_kq_whose_reader_never_reads(self):
        # Guards the output's wait: blocked in a write to a full pipe, kq must see the stop
        # (poll beside the cancellation's eventfd) and give the reader only its 0.5 s grace.
        # A write that waits in write(2), signals not interrupting it, never ends.
        flood = subprocess.Popen(["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=50000000", "status=none"])
        proc = subprocess.Popen([harness.KQ, "trace tracepoint:raw_syscalls:sys_enter select id"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.assertTrue(proc.stdout.readline().startswith(b"TIME"))

            def unread():
                count = bytearray(4)
                fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, count)
                return int.from_bytes(count, sys.byteorder)

            # Full: what waits in the pipe stays the same for 0.3 s while the flood goes on
            # (kq adds to it every 50 ms while there is room). How much that is varies:
            # writes can leave the pipe's pages partly filled.
            seen = []

            def pipe_full():
                time.sleep(0.01)
                seen.append(unread())
                return len(seen) >= 30 and seen[-1] > 0 and len(set(seen[-30:])) == 1

            wait_for(pipe_full, 20, "kq to fill its pipe")
            start = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
            latency = time.monotonic() - start
            err = proc.stderr.read().decode()
        finally:
            for p in (proc, flood):
                p.kill()
                p.wait()
            proc.stdout.close()
            proc.stderr.close()
        print(f"\n  stop latency with an unread pipe: {latency * 1000:.0f} ms", file=sys.stderr)
        self.assertRegex(err, SUMMARY)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("kq: error: cannot write the output: nobody reads it", err)
        self.assertLess(latency, 1.3)

    def test_the_command_starts_with_no_stop_signal_blocked(self):
        # Guards child_command: kq blocks the stop signals in all its threads (for the
        # signalfd), and a blocked mask survives fork and exec; the command must start
        # without them blocked or ignored, so that it can be interrupted like any program.
        # `exec`: the program the shell becomes keeps the mask kq gave the shell (the
        # shell's own children would not show it: dash clears the mask when it forks).
        # Blocked, the SIGINT below would stay pending and sleep would run its 10 s.
        proc = subprocess.Popen([harness.KQ, "trace tracepoint:syscalls:sys_enter_getppid "
                                 'where comm == "kqnobody" select pid', "-c", "exec sleep 9.913"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.assertTrue(proc.stdout.readline().startswith(b"TIME"))  # attached, released

            def command():
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    pids = f.read().split()
                for pid in pids:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if f.read().startswith(b"sleep\0"):
                            return int(pid)
                return None

            wait_for(lambda: command() is not None, 10, "the command to exec sleep")
            sleep = command()
            held = {field: sorted(signal.Signals(s).name for s in signal_mask(sleep, field) & set(STOP_SIGNALS))
                    for field in ("SigBlk", "SigIgn")}
            start = time.monotonic()
            os.kill(sleep, signal.SIGINT)
            proc.wait(timeout=20)
            elapsed = time.monotonic() - start
            err = proc.stderr.read().decode()
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.assertEqual(held, {"SigBlk": [], "SigIgn": []}, "the stop signals of the command")
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("kq: the command was killed by SIGINT", err)
        self.assertLess(elapsed, 2.0, err)


# One program execs another under the same PID. Both are position-independent and, with
# address randomisation off (setarch -R), load at the same address: alpha_big covers the
# address where the second program has beta_first, so names read from the first program's
# mappings would call beta_first `alpha_big+0x...`.
FIRST_PROGRAM = """
#include <unistd.h>
__attribute__((noinline)) void alpha_one(void) { asm volatile("nop"); }
__attribute__((noinline)) void alpha_big(void) { asm volatile(".fill 8192, 1, 0x90"); }
int main(void) {
  alpha_one();
  usleep(300000);  /* kq names this event's stack before the exec */
  char *argv[] = {"%s", 0};
  execv(argv[0], argv);
  return 1;
}
"""
SECOND_PROGRAM = """
#include <unistd.h>
__attribute__((noinline)) void beta_pad(void) { asm volatile(".fill 300, 1, 0x90"); }
__attribute__((noinline)) void beta_first(void) { asm volatile("nop"); }
int main(void) { beta_first(); usleep(300000); return 0; }
"""
# Calls getppid, then lives on a while so that kq names its stack while its mappings can
# still be read (argv[1] milliseconds). Its stack names libc's getppid, then main: libc's
# getppid keeps no frame pointer, so the frame walk skips its caller, a function of its own.
SHORT_LIVED = """
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) void call_getppid(void) { getppid(); asm volatile(""); }
int main(int argc, char **argv) { call_getppid(); usleep(atoi(argv[1]) * 1000); return 0; }
"""

# Named kqpace: calls getppid once for each line it reads, then `flood N` calls it N times.
PACED = r"""
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, b"kqpace", 0, 0, 0)
for line in sys.stdin:
    words = line.split()
    for _ in range(int(words[1]) if words[0] == "flood" else 1):
        os.getppid()
    print("done", flush=True)
"""


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RingPace(harness.KqTestCase):
    """The session reads the ring on a timer while records come and sleeps when they stop
    (engine/ring_pace.h): a lone event still prints at once, asleep or not, and a flood
    reaches the output whole."""

    def test_lone_events_print_at_once_and_a_flood_whole(self):
        # kq writes the file through a description of its own: one shared with the reads
        # here would have its offset moved under kq's writes.
        path = os.path.join(WORKDIR, "paced.json")
        with open(path, "w") as out:
            proc = subprocess.Popen([harness.KQ, "-f", "json", "--buffer-size", "64M",
                                     'trace syscall:getppid where comm == "kqpace" select pid'],
                                    stdout=out, stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait)
        self.addCleanup(lambda: proc.poll() is None and proc.send_signal(signal.SIGINT))
        script = harness.write_file(WORKDIR, "paced.py", PACED)
        paced = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(paced.wait)
        self.addCleanup(paced.stdin.close)

        def ask(what):
            paced.stdin.write(what + "\n")
            paced.stdin.flush()
            paced.stdout.readline()

        def events():
            with open(path) as f:
                whole = f.read().split("\n")[:-1]  # the last is cut short (or empty)
            return [json.loads(l) for l in whole if l.startswith("{") and "summary" not in l]

        deadline = time.monotonic() + 30
        while not events() and time.monotonic() < deadline:  # kq is ready once it prints an event
            ask("one")
            time.sleep(0.05)
        time.sleep(0.2)  # the last ask's event, if it came after the first
        before = len(events())
        self.assertGreater(before, 0, "kq printed nothing in 30 s")
        for n, pause in enumerate((0.0, 0.01, 0.2, 0.2), 1):  # on the timer, then asleep after a quiet while
            time.sleep(pause)
            ask("one")
            wait_for(lambda: len(events()) == before + n, 0.5, f"event {n} (after {pause} s) to print")
        ask("flood 100000")
        paced.stdin.close()
        paced.wait()
        wait_for(lambda: len(events()) == before + 100004, 10, "the flood to print")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        self.assertEqual({e["pid"] for e in events()}, {paced.pid})
        summary = json.loads(err.splitlines()[-1])["summary"]
        self.assertEqual((summary["events"], summary["lost"]), (before + 100004, 0), summary)


# Calls libc's getpid until killed: a uprobe on it fires without end.
GETPID_FOREVER = """
#include <unistd.h>
int main(void) {
  for (;;) getpid();
}
"""


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class DetachAfterOutput(harness.KqTestCase):
    """A uprobe's detach waits about 100 ms in the kernel: kq stops its program by its word,
    writes everything, exits, and leaves the detach to a process of its own
    (runtime/link_reaper.h), which holds no pipe of kq's and is gone, with every program,
    well within a second."""

    def test_output_ends_before_the_detach_and_nothing_stays_loaded(self):
        if loaded_kq_programs() is None:
            self.skipTest("the leak check is off (KQ_TEST_SKIP_LEAK_CHECK=1): this test is that check")
        libc = next((p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                     if os.path.exists(p)), None)
        if libc is None:
            self.skipTest("no /lib/x86_64-linux-gnu/libc.so.6 to put a uprobe in")
        flood = subprocess.Popen([build_c("kqreap", GETPID_FOREVER)])
        self.addCleanup(flood.wait)
        self.addCleanup(flood.kill)
        # kq's reaper, orphaned as kq exits, becomes this process's child: it can be told
        # from any other kq's, and its end seen. (Whether its programs are still listed says
        # nothing: kernels since 6.x let go of a uprobe's program before the detach's wait.)
        PR_SET_CHILD_SUBREAPER = 36
        libc_so = ctypes.CDLL(None, use_errno=True)
        self.assertEqual(libc_so.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0)
        self.addCleanup(libc_so.prctl, PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        still_detaching = 0  # runs whose reaper was still at work as kq ended: kq did not wait
        for run in range(3):
            # Pipes, as a shell's `$(kq ...)` or `kq ... | head` has: they end when kq's
            # writers all close, which a reaper holding them would put off.
            proc = subprocess.Popen([harness.KQ, "-d", "300ms", "-f", "json",
                                     f'trace uprobe:{libc}:getpid where comm == "kqreap" select pid'],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = proc.communicate(timeout=60)
            ended = time.monotonic()
            reapers = detaching_children()
            still_detaching += bool(reapers)
            self.assertEqual(proc.returncode, 0, err)
            events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            self.assertGreater(len(events), 0, err)
            self.assertEqual({e["pid"] for e in events}, {flood.pid})
            summary = json.loads(err.splitlines()[-1])["summary"]
            self.assertEqual(summary["events"], len(events), summary)  # what was read and shown
            for reaper in reapers:
                while os.waitpid(reaper, os.WNOHANG) == (0, 0) and time.monotonic() < ended + 1:
                    time.sleep(0.01)
            while loaded_kq_programs() and time.monotonic() < ended + 1:
                time.sleep(0.02)
            self.assertEqual(detaching_children(), [], f"run {run}: kq's reaper still at work a second after kq ended")
            self.assertEqual(loaded_kq_programs(), [], f"run {run}: kq's programs still loaded a second after it ended")
        # The kernel's wait is 50 to 100 ms, kq's exit after its output well under one: a
        # kq that waited for the detach would never leave its reaper at work behind it.
        self.assertGreater(still_detaching, 0, "kq's exit waited for the uprobe's detach in every run")


def detaching_children():
    """This process's children named kq-detach and not yet ended: kq's reapers."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if comm == "kq-detach" and int(ppid) == os.getpid() and state != "Z":
            found.append(int(entry))
    return found


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class UserStacks(harness.KqTestCase):

    def test_a_frame_after_exec_is_named_from_the_new_program(self):
        # Guards the identity check of host/user_symbols: mappings kept per PID for the whole
        # session named the second program's frame after the first's (`alpha_big+0xde`).
        if shutil.which("setarch") is None:
            self.skipTest("needs setarch (util-linux) to turn address randomisation off")
        second = build_c("kqsecond", SECOND_PROGRAM)
        first = build_c("kqfirst", FIRST_PROGRAM % second)
        status, out, err = kq("-f", "json", f"trace uprobe:{first}:alpha_one, uprobe:{second}:beta_first select ustack",
                              "-c", f"setarch -R {first}")
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(events), 2, out)
        self.assertEqual(events[0]["pid"], events[1]["pid"], "one process, two programs")
        self.assertEqual(events[0]["ustack"][0], "alpha_one", events[0])
        self.assertEqual(events[1]["ustack"][0], "beta_first", events[1])
        self.assertFalse([f for f in events[1]["ustack"] if f.startswith("alpha")], events[1])

    @unittest.skipIf(os.environ.get("KQ_SANITIZED") == "1",
                     "AddressSanitizer keeps freed memory in quarantine: RSS says nothing of kq's caches")
    def test_stacks_of_many_processes_keep_memory_bounded(self):
        # Guards the bounds of the symbol caches: with mappings kept for every process ever
        # seen, and each process's libc parsed again (files kept by /proc/PID/map_files
        # path), kq grew by about 50 KiB per process whose stack it printed.
        program = build_c("kqshortlived", SHORT_LIVED)
        out_path = os.path.join(WORKDIR, "stacks.txt")
        with open(out_path, "w") as out:
            proc = subprocess.Popen([harness.KQ, "trace tracepoint:syscalls:sys_enter_getppid "
                                     'where comm == "kqshortlived" select ustack'],
                                    stdout=out, stderr=subprocess.PIPE)
        try:
            def printed():
                """Events printed so far, and how many of their stacks name main."""
                with open(out_path) as f:
                    text = f.read()
                return len(re.findall(r" kqshortlived( |$)", text, re.M)), text.count("\n        main+")
            wait_for(lambda: os.path.getsize(out_path) > 0, 20, "kq to attach")

            def run(count, batch=25):
                # In batches that live 150 ms each: kq reads each one's maps while it lives.
                for _ in range(count // batch):
                    procs = [subprocess.Popen([program, "150"]) for _ in range(batch)]
                    for p in procs:
                        p.wait()

            run(50)
            wait_for(lambda: printed()[0] >= 50, 20, "the first 50 stacks")
            after_first = vm_rss_kib(proc.pid)
            run(400)
            wait_for(lambda: printed()[0] >= 450, 30, "all 450 stacks")
            at_end = vm_rss_kib(proc.pid)
            events, named = printed()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
            err = proc.stderr.read().decode()
        finally:
            proc.kill()
            proc.wait()
            proc.stderr.close()
        self.assertEqual(proc.returncode, 0, err)
        print(f"\n  VmRSS after 50 processes: {after_first} KiB, after 450: {at_end} KiB", file=sys.stderr)
        self.assertEqual(events, 450, err)
        self.assertGreater(named, 400, "the stacks were named (the caches were used)")
        # 400 more processes: about 20 MB more when unbounded; a few hundred KiB bounded.
        self.assertLess(at_end - after_first, 4096)


if __name__ == "__main__":
    harness.main(sys.argv)
