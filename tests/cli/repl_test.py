#!/usr/bin/env python3
"""The interactive session as a person uses it: kq in a pseudo-terminal (terminal.py), queries
typed, keys pressed, and the screen checked. Queries run in the real kernel (as root).

Usage: repl_test.py PATH_TO_KQ
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
import harness  # noqa: E402  (the leak check the runtime tests use)
from terminal import Session  # noqa: E402

KQ = None
WORKDIR = tempfile.mkdtemp(prefix="kqrepl")
PROGRAM = "kqrepltrue"  # a command name no one else runs


def run_program(name=PROGRAM):
    """Runs a copy of /bin/true named `name`: one sched_process_exec event with that comm."""
    path = os.path.join(WORKDIR, name)
    if not os.path.exists(path):
        shutil.copy("/bin/true", path)
    subprocess.run([path])


def exec_query(name=PROGRAM, extra="limit 1"):
    return f'trace tracepoint:sched:sched_process_exec where comm == "{name}" select comm {extra}'


class ReplTestCase(harness.KqTestCase):
    def setUp(self):
        super().setUp()
        self.state = tempfile.mkdtemp(prefix="kqstate", dir=WORKDIR)
        self.sessions = []

    def tearDown(self):
        for s in self.sessions:
            s.close()
        super().tearDown()

    def session(self, **env):
        s = Session(KQ, env={"XDG_STATE_HOME": self.state, **env})
        self.sessions.append(s)
        s.wait_prompt()
        return s

    def quit(self, s):
        s.enter("quit")
        self.assertEqual(s.wait_exit(), 0, s.screen.text())

    def stop(self, s, number, events):
        """`stop N`: the job says all the events it saw, and that it stopped."""
        mark = s.mark()
        s.enter(f"stop {number}")
        s.wait_for(rf"^\[{number}\] kq: {events} events, 0 lost", since=mark)
        s.wait_for(rf"^\[{number}\] stopped  trace", since=mark)


class NothingEndsTheSession(ReplTestCase):
    def test_an_error_then_a_working_query(self):
        s = self.session()
        s.enter("trace tracepoint:sched:sched_process_exec where nosuch == 1")
        s.wait_for(r"unknown name `nosuch` \[UnknownName\]")
        s.wait_prompt()
        s.enter(exec_query())
        s.wait_for(r"^TIME +PID")
        run_program()
        s.wait_for(rf" {PROGRAM}$")
        s.wait_for(r"kq: 1 event, 0 lost")
        s.wait_prompt()
        self.quit(s)

    def test_a_verifier_rejection_then_help(self):
        s = self.session(KQ_TEST_VERIFIER_REJECT="1")
        s.enter('trace tracepoint:net:net_dev_xmit where comm == "x" select comm')
        s.wait_for(r"\[VerifierRejected\]")
        s.wait_prompt()
        mark = s.mark()
        s.enter("help")
        s.wait_for(r"check QUERY", since=mark)
        s.wait_for(r"quit, exit +end the session", since=mark)
        s.wait_prompt()
        self.quit(s)

    def test_a_kernel_function_that_cannot_attach_then_help(self):
        # Arguments past the registers at exit ended the session once (an internal error);
        # here, without fentry, it cannot attach: a diagnostic either way.
        s = self.session()
        s.enter("trace ip_append_data(flags, return)")
        s.wait_for(r"error: cannot attach to ip_append_data on this kernel|kq: \d+ events?")
        s.wait_prompt()
        mark = s.mark()
        s.enter("help")
        s.wait_for(r"check QUERY", since=mark)
        self.quit(s)

    def test_a_crash_of_a_query_then_a_working_query(self):
        s = self.session(KQ_TEST_CRASH_QUERY="1")
        s.enter("trace tracepoint:sched:sched_switch")
        s.wait_for(r"kq: internal error: the query's process was killed by SIGABRT")
        s.wait_prompt()
        mark = s.mark()
        s.enter("info syscall:openat")
        s.wait_for(r"^syscall:openat$", since=mark)
        self.quit(s)

    def test_ctrl_c_at_the_prompt_abandons_the_line(self):
        s = self.session()
        s.type("trace half a quer")
        s.ctrl_c()
        s.wait_prompt()
        mark = s.mark()
        s.enter("decls")
        s.wait_prompt()
        self.assertNotIn("error", "\n".join(s.screen.lines()[mark:]))
        self.quit(s)


class CInTheSession(ReplTestCase):
    def test_a_header_read_once_serves_every_query(self):
        # Clang reads the header for the first query (in the session, which keeps the
        # answer); the second is checked from what the session kept.
        s = self.session(XDG_CACHE_HOME=tempfile.mkdtemp(dir=WORKDIR))
        s.enter('let sigs = macros("asm/signal.h", "SIG")')
        s.wait_prompt()
        for _ in range(2):
            # Each query's own lines: the first query's header on the screen must not start
            # the program before the second is attached.
            mark = s.mark()
            s.enter(exec_query(extra="select sigs[9] as name limit 1").replace(" select comm", ""))
            s.wait_for(r"^TIME +PID", since=mark)
            run_program()
            s.wait_for(r" SIGKILL$", since=mark)
            s.wait_for(r"kq: 1 event, 0 lost", since=mark)
            s.wait_prompt()
        self.quit(s)


class TabCompletion(ReplTestCase):
    def listed(self, s, since):
        """The words listed under the line since row `since`."""
        return set(" ".join(s.screen.lines()[since:]).split())

    def test_members_of_skb_then_of_its_device(self):
        s = self.session()
        line = "trace tracepoint:net:net_dev_xmit(skb) where skb->"
        s.type(line)
        mark = s.mark()
        s.tab()
        s.wait_for(r"^kq> " + line.replace("(", r"\(").replace(")", r"\)") + "$", since=mark + 1)
        self.assertTrue({"len", "dev", "mark", "protocol"} <= self.listed(s, mark + 1), s.screen.text())
        s.type("dev->")
        mark = s.mark()
        s.tab()
        s.wait_for(r"^kq> .*skb->dev->$", since=mark + 1)
        members = self.listed(s, mark + 1)
        self.assertTrue({"ifindex", "mtu", "name"} <= members, s.screen.text())
        self.assertNotIn("len", members)  # a net_device's, not an sk_buff's
        s.type("mt")
        s.tab()
        s.wait_current("kq> " + line + "dev->mtu")

    def test_tracepoint_events_of_net(self):
        s = self.session()
        s.type("trace tracepoint:sch")
        s.tab()
        s.wait_current("kq> trace tracepoint:sched:")
        s.type("\x15")  # Ctrl-U: the line emptied
        s.type("trace tracepoint:net:")
        s.tab()  # what every event starts with
        mark = s.mark()
        s.tab()
        s.wait_for(r"^kq> trace tracepoint:net:n$", since=mark + 1)
        self.assertTrue({"net_dev_xmit", "netif_receive_skb"} <= self.listed(s, mark + 1), s.screen.text())

    def test_kernel_functions(self):
        s = self.session()
        s.type("trace tcp_v4_")
        mark = s.mark()
        s.tab()
        s.wait_for(r"^kq> trace tcp_v4_$", since=mark + 1)
        self.assertTrue({"tcp_v4_connect", "tcp_v4_rcv"} <= self.listed(s, mark + 1), s.screen.text())
        s.type("conne")
        s.tab()
        s.wait_current("kq> trace tcp_v4_connect")

    def test_many_candidates_are_counted_then_all_listed(self):
        # Hundreds of tcp_ functions: the first list stops at 150 and counts the rest; a
        # Tab again on the same text lists every one, the last of them too.
        s = self.session()
        s.type("trace tcp_")
        mark = s.mark()
        s.tab()
        s.wait_for(r"^\.\.\. and \d+ more \(Tab again lists them all\)$", since=mark)
        s.wait_for(r"^kq> trace tcp_$", since=mark + 1)
        names = lambda since: {w for w in self.listed(s, since) if w.startswith("tcp_") and w != "tcp_"}
        first = names(mark + 1)
        mark = s.mark()
        s.tab()
        s.wait_for(r"^kq> trace tcp_$", since=mark + 1)
        everything = names(mark + 1)
        self.assertNotIn("more", self.listed(s, mark + 1), s.screen.text())
        self.assertEqual(len(first), 150, s.screen.text())
        self.assertGreater(len(everything), len(first))
        self.assertTrue(first <= everything)


class HistoryAndLines(ReplTestCase):
    UP = "\x1b[A"

    def test_history_is_recalled_after_a_restart(self):
        s = self.session()
        s.enter("info syscall:kill")
        s.wait_prompt()
        s.enter("check trace tracepoint:net:net_dev_xmit(skb) \\")
        s.enter("  where skb->len > 1")
        s.wait_prompt()
        self.quit(s)
        with open(os.path.join(self.state, "kq", "history")) as f:
            self.assertIn("syscall:kill", f.read())
        s = self.session()
        s.type(self.UP)
        s.wait_current("kq> quit")
        s.type(self.UP)  # the continued query, on one line
        s.wait_current("kq> check trace tracepoint:net:net_dev_xmit(skb) where skb->len > 1")
        s.type(self.UP)
        s.wait_current("kq> info syscall:kill")
        mark = s.mark()
        s.type("\r")
        s.wait_for(r"arguments \(tracepoint:syscalls:sys_enter_kill\)", since=mark)
        self.quit(s)

    def test_a_pasted_long_line_runs_whole(self):
        # 10,000 characters at once, as a paste gives them: the line arrives whole (each key
        # no longer converts the whole line again; bench/repl_latency.py times it).
        pids = " or ".join(f"pid == {1000000 + i}" for i in range(700))
        query = (f'trace tracepoint:sched:sched_process_exec where comm == "{PROGRAM}" or {pids} '
                 "select comm limit 1")
        self.assertGreater(len(query), 10000)
        s = self.session()
        for i in range(0, len(query), 4096):
            os.write(s.fd, query[i:i + 4096].encode())
        s.type("\r")
        s.wait_for(r"^TIME +PID", timeout=60)
        run_program()
        s.wait_for(rf" {PROGRAM} *$")
        s.wait_prompt()

    def test_an_unfinished_query_goes_on_on_the_next_line(self):
        s = self.session()
        s.enter("trace tracepoint:sched:sched_process_exec where")
        s.wait_current("..>")
        s.enter(f'comm == "{PROGRAM}" select comm,')
        s.enter("  pid limit 1")
        s.wait_for(r"^TIME +comm +pid$")  # both selected: the prefix is the time alone
        run_program()
        s.wait_for(rf" {PROGRAM} +\d+$")
        s.wait_prompt()
        # A `\` at the end continues a line; diagnostics count the lines.
        s.enter("check trace tracepoint:sched:sched_process_exec \\")
        s.enter("  where nosuch > 1")
        s.wait_for(r"<repl>:2:9: error: unknown name `nosuch`")
        s.wait_prompt()
        # Ctrl-C abandons the whole input.
        s.enter("trace tracepoint:sched:sched_process_exec where")
        s.type("comm")
        s.ctrl_c()
        s.wait_prompt()
        self.quit(s)


def session_processes(state):
    """The pids of processes started with XDG_STATE_HOME=`state`: a session and its queries."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"XDG_STATE_HOME={state}".encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


class BackgroundJobs(ReplTestCase):
    def start_job(self, s, number=1, name=PROGRAM):
        s.enter(exec_query(name, "&"))
        s.wait_for(rf"^\[{number}\] trace tracepoint:sched:sched_process_exec")
        s.wait_prompt()

    def test_output_comes_above_the_line_being_typed(self):
        s = self.session()
        self.start_job(s)
        s.type("info sysc")
        for _ in range(3):
            run_program()
        s.wait_for(rf"^\[1\] \d\d:\d\d:\d\d\.\d+ .* {PROGRAM}$")
        s.wait_for(r"^\[1\] TIME +PID")
        s.pump(0.5)
        lines = s.screen.lines()
        self.assertEqual(sum(1 for l in lines if l.startswith("[1] ") and l.endswith(PROGRAM)), 3, s.screen.text())
        # The line being typed is whole, below the output, and goes on being typed.
        self.assertEqual(s.screen.current(), "kq> info sysc")
        self.assertFalse(any("info sysc" in l for l in lines[:-1] if l.startswith("[1]")), s.screen.text())
        mark = s.mark()
        s.enter("all:kill")
        s.wait_for(r"^arguments \(tracepoint:syscalls:sys_enter_kill\)", since=mark)
        # `jobs` counts its events.
        s.wait_prompt()
        mark = s.mark()
        s.enter("jobs")
        s.wait_for(r"^\[1\] 3 events  trace tracepoint:sched:sched_process_exec", since=mark)
        # `stop 1` detaches it: its summary, then that it stopped.
        if harness.loaded_kq_programs() is not None:
            self.assertTrue(harness.loaded_kq_programs(), "nothing loaded while the job runs")
        s.wait_prompt()
        self.stop(s, 1, 3)
        s.wait_prompt()
        mark = s.mark()
        s.enter("jobs")
        s.wait_prompt()
        self.assertEqual(s.screen.lines()[mark + 1:], ["kq>"], s.screen.text())
        s.enter("stop 1")
        s.wait_for(r"no background query `1`")
        self.quit(s)

    def test_ctrl_c_stops_the_foreground_query_only(self):
        s = self.session()
        self.start_job(s)
        s.enter(exec_query("kqreplother", ""))
        s.wait_for(r"^TIME +PID +comm$")
        run_program("kqreplother")
        s.wait_for(r" kqreplother$")
        s.ctrl_c()
        s.wait_for(r"^(\^C)?kq: 1 event, 0 lost")  # the terminal echoes Ctrl-C
        s.wait_prompt()
        run_program()  # the background job still sees its events
        s.wait_for(rf"^\[1\] .* {PROGRAM}$")
        self.quit(s)

    def test_quit_detaches_everything(self):
        s = self.session()
        self.start_job(s, 1)
        self.start_job(s, 2, "kqreplother")
        loaded = harness.loaded_kq_programs()  # None with KQ_TEST_SKIP_LEAK_CHECK=1
        if loaded is not None:
            self.assertGreaterEqual(len(loaded), 2, "the jobs' programs are not loaded")
        s.enter("quit")
        self.assertEqual(s.wait_exit(), 0, s.screen.text())
        s.wait_for(r"^\[1\] stopped  trace")
        s.wait_for(r"^\[2\] stopped  trace")
        self.assertEqual(session_processes(self.state), [])
        if loaded is not None:
            deadline = time.monotonic() + 5  # programs are freed a moment after their last fd
            while harness.loaded_kq_programs() and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(harness.loaded_kq_programs(), [], "kq left BPF programs loaded")

    def test_a_killed_session_leaves_nothing_behind(self):
        s = self.session()
        self.start_job(s)
        self.assertGreater(len(session_processes(self.state)), 1)
        os.kill(s.pid, 9)
        s.wait_exit()
        deadline = time.monotonic() + 10
        while session_processes(self.state) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(session_processes(self.state), [])


class SharedPlaces(ReplTestCase):
    """A job on a place another job attached to takes a slot of that job's site: nothing new is
    attached, each job counts exactly its own events, and stopping one (the site's maker
    included) leaves the others' counts whole."""

    def start_job(self, s, number):
        s.enter(exec_query(PROGRAM, "&"))
        s.wait_for(rf"^\[{number}\] trace tracepoint:sched:sched_process_exec")
        s.wait_prompt()

    def events_of(self, s, number, count):
        # A job counts an event once its reader has read it, a moment after the event: ask
        # again until it has (the count must come to exactly `count`).
        for attempt in range(20):
            s.wait_prompt()
            mark = s.mark()
            s.enter("jobs")
            shown = int(s.wait_for(rf"^\[{number}\] (\d+) events? ", since=mark).group(1))
            if shown >= count:
                break
            time.sleep(0.5)
        self.assertEqual(shown, count, s.screen.text())

    def links_are(self, count):
        if harness.kq_links() is None:
            return
        deadline = time.monotonic() + 5  # a link goes a moment after its last descriptor
        while harness.kq_links() != count and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(harness.kq_links(), count)

    def test_a_second_job_attaches_nothing_and_stopping_either_leaves_the_other_exact(self):
        s = self.session()
        self.start_job(s, 1)
        self.links_are(1)
        self.start_job(s, 2)
        self.links_are(1)  # the second job is a slot of the first one's site
        for _ in range(3):
            run_program()
        self.events_of(s, 1, 3)
        self.events_of(s, 2, 3)
        # The site's maker stops: the other job keeps the site, and every event.
        self.stop(s, 1, 3)
        self.links_are(1)
        for _ in range(2):
            run_program()
        self.events_of(s, 2, 5)
        # A third job takes the slot the first one left.
        self.start_job(s, 3)
        self.links_are(1)
        run_program()
        self.events_of(s, 2, 6)
        self.events_of(s, 3, 1)
        self.stop(s, 2, 6)
        run_program()
        self.events_of(s, 3, 2)
        self.stop(s, 3, 2)
        # No job holds a slot: the site is detached.
        self.links_are(0)
        self.quit(s)
        if harness.loaded_kq_programs() is not None:
            deadline = time.monotonic() + 5
            while harness.loaded_kq_programs() and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(harness.loaded_kq_programs(), [], "kq left BPF programs loaded")

    def test_the_same_question_of_other_values_loads_the_first_object_with_its_own_values(self):
        # The literals a `where` compares are read from the object's .rodata, so a job that
        # differs from an earlier one only in them starts from the object that one compiled
        # (the cache keeps it by the query's shape), given its own values: here the second
        # job's `uid == 1` must see none of the events that the first's `uid == 0` sees.
        cache = tempfile.mkdtemp(dir=WORKDIR)
        objects = os.path.join(cache, "kq", "objects")
        other = PROGRAM[:-1] + "X"  # as long as PROGRAM: the same shape
        query = 'trace tracepoint:sched:sched_process_exec where comm == "{}" and uid == {} select comm &'
        s = self.session(XDG_CACHE_HOME=cache)
        s.enter(query.format(PROGRAM, 0))
        s.wait_for(r"^\[1\] trace tracepoint:sched:sched_process_exec")
        s.wait_prompt()
        kept = os.listdir(objects)
        self.assertEqual(len(kept), 1, kept)
        compiled = os.stat(os.path.join(objects, kept[0])).st_mtime_ns
        time.sleep(0.05)
        s.enter(query.format(PROGRAM, 1))
        s.wait_for(r"^\[2\] trace tracepoint:sched:sched_process_exec")
        s.wait_prompt()
        s.enter(query.format(other, 0))
        s.wait_for(r"^\[3\] trace tracepoint:sched:sched_process_exec")
        s.wait_prompt()
        # Both found the first job's object (a hit renews its file's time) and compiled none.
        self.assertEqual(os.listdir(objects), kept)
        self.assertGreater(os.stat(os.path.join(objects, kept[0])).st_mtime_ns, compiled)
        for _ in range(3):
            run_program()
        for _ in range(2):
            run_program(other)
        self.events_of(s, 1, 3)
        self.events_of(s, 3, 2)
        self.events_of(s, 2, 0)
        self.stop(s, 2, 0)
        self.stop(s, 3, 2)
        self.stop(s, 1, 3)
        self.quit(s)

    def test_a_job_that_ends_itself_empties_its_slot(self):
        s = self.session()
        self.start_job(s, 1)
        s.enter(exec_query(PROGRAM, "limit 2 &"))
        s.wait_for(r"^\[2\] trace tracepoint:sched:sched_process_exec")
        s.wait_prompt()
        self.links_are(1)
        for _ in range(3):
            run_program()
        s.wait_for(r"^\[2\] done  trace")
        self.events_of(s, 1, 3)
        run_program()
        self.events_of(s, 1, 4)
        self.quit(s)
        self.links_are(0)


class ScriptOnStandardInput(harness.KqTestCase):
    def test_a_piped_script_runs(self):
        script = (f'let name = "{PROGRAM}"\n'
                  "trace tracepoint:sched:sched_process_exec where comm == name select comm limit 1\n")
        path = os.path.join(WORKDIR, "script.kq")
        with open(path, "w") as f:
            f.write(script)
        with open(path) as stdin:
            proc = subprocess.Popen([KQ], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            run_program()
            time.sleep(0.2)
        out, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn(PROGRAM, out.decode())
        self.assertIn("kq: 1 event", err.decode())


if __name__ == "__main__":
    KQ = sys.argv[1]
    harness.KQ = KQ
    reason = harness.skip_reason()
    if reason:
        print(f"SKIPPED: {reason}")
        sys.exit(0)
    try:
        unittest.main(argv=[sys.argv[0], "-v", *sys.argv[2:]])
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
