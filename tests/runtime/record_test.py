#!/usr/bin/env python3
"""`kq record` and `kq replay`, and the file formats for other tools. A recording replayed
as an unprivileged user with no BTF, after its processes exited, prints byte for byte what
the live run printed (typed dumps, user stacks, a join, the per-packet view). A new query
over a recording counts what a live run counted. Losses under a flood are exact. A
recording cut short or corrupted, or a file that is not one, is an error that names where.
A replay query naming what was not recorded is a diagnostic. `-f pcapng` (live and in
replay) as tshark and capinfos read it, `-f folded` as flame graph tools read it, `-f
perfetto` as Chrome's trace-event JSON.

Usage: record_test.py PATH_TO_KQ
"""
import collections
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
from harness import kq, skip_reason

WORKDIR = tempfile.mkdtemp(prefix="kq-record-")
os.chmod(WORKDIR, 0o755)  # the unprivileged replays read recordings from here
MARK = 0x6B710001
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
NOBODY_HOME = os.path.join(WORKDIR, "nobody-home")
os.makedirs(NOBODY_HOME)
os.chmod(NOBODY_HOME, 0o777)
# tshark reads its preferences from $HOME: run as nobody with root's HOME it would complain
# about every file it may not read.
NOBODY_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": NOBODY_HOME, "LC_ALL": "C"}


def write_script(name, body, mode=0o755):
    path = harness.write_file(WORKDIR, name, body)
    os.chmod(path, mode)
    return path


# Three marked datagrams of different lengths to a port nobody listens on (each dropped at
# skb:kfree_skb, NO_SOCKET), and two unmarked ones to another (not to be seen at all).
SENDER = write_script("send_udp.py", f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 36, {MARK:#x})  # SO_MARK
for n in (20, 21, 22):
    s.sendto(b"x" * n, ("127.0.0.1", 39999))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in (30, 31):
    u.sendto(b"y" * n, ("127.0.0.1", 39998))
""")
SEND = f"{sys.executable} {SENDER}"
UDP_LENGTHS = {"28", "29", "30"}  # 8 bytes of UDP header and 20, 21, 22 of payload

# Names itself kqopena (prctl PR_SET_NAME) and opens a file 7 times, then kqopenb, 13 times.
OPENER = write_script("open_counted.py", """
import ctypes, os
libc = ctypes.CDLL(None)
for comm, times in ((b"kqopena", 7), (b"kqopenb", 13)):
    libc.prctl(15, comm, 0, 0, 0)
    for _ in range(times):
        os.close(os.open("/etc/hostname", os.O_RDONLY))
""")

FLOOD_CALLS = 200000
FLOODER = write_script("flood.py", f"""
import ctypes, os
ctypes.CDLL(None).prctl(15, b"kqflood", 0, 0, 0)
for _ in range({FLOOD_CALLS}):
    os.getppid()
""")

# kq_leaf calls getpid, so it sets up a frame (a leaf without one would hide its caller
# from the frame-pointer unwinder, kq_middle among the frames is what says the unwind is
# right); main sleeps afterwards so kq reads the symbols while the program is alive.
STACK_PROGRAM_SOURCE = """
#include <unistd.h>
volatile int kq_sink;
__attribute__((noinline)) int kq_leaf(int x) { kq_sink = getpid(); return x * 2 + kq_sink; }
__attribute__((noinline)) int kq_middle(int x) { return kq_leaf(x) + 1; }
int main(void) {
    int s = 0;
    for (int i = 0; i < 3; i++) s += kq_middle(i);
    usleep(1000000);
    return s == 0;
}
"""

SUMMARY = re.compile(r"^kq: \d+ events, \d+ lost.*$", re.M)
CRASH = re.compile(r"Traceback|terminate called|Aborted|Segmentation|AddressSanitizer|runtime error")


def missing(*programs):
    """The first of `programs` not installed, for a skip's reason; None when all are."""
    return next((p for p in programs if shutil.which(p) is None), None)


def as_nobody(argv, hide_btf=False, timeout=60):
    """Runs `argv` as uid/gid 65534 with no groups; with `hide_btf`, in a mount namespace
    where /sys/kernel/btf is an empty tmpfs (no vmlinux to read types from)."""
    if hide_btf:
        inner = " ".join(shlex_quote(a) for a in [*NOBODY, *argv])
        argv = ["unshare", "-m", "sh", "-c",
                f"mount -t tmpfs none /sys/kernel/btf && test ! -e /sys/kernel/btf/vmlinux && exec {inner}"]
    else:
        argv = [*NOBODY, *argv]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, env=NOBODY_ENV)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def shlex_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def readable(path):
    """Lets nobody read `path` (a file the root kq wrote, 0600 or per umask)."""
    os.chmod(path, 0o644)
    return path


def json_summary(out, err):
    """The {"summary": ...} object a JSON run ends with, on either stream."""
    for line in reversed((out + "\n" + err).splitlines()):
        if line.startswith('{"summary"'):
            return json.loads(line)["summary"]
    raise AssertionError(f"no JSON summary in\n{out[-2000:]}\n{err}")


def table_counts(out):
    """comm -> count() from the JSON table rows of a `group by comm select comm, count()`
    run (its last table, as a run ending prints it)."""
    counts = None
    for line in out.splitlines():
        obj = json.loads(line)
        if "rows" in obj:
            counts = {row["comm"]: row["count()"] for row in obj["rows"]}
    return counts or {}


def tshark_packets(path):
    """Each packet of a pcap-ng file as tshark (run as nobody) reads it: its interface name,
    its comments, and its UDP destination port and length."""
    status, out, err = as_nobody(["tshark", "-r", path, "-T", "json", "-e", "frame.interface_name",
                                  "-e", "frame.comment", "-e", "udp.dstport", "-e", "udp.length"])
    if status != 0:
        raise AssertionError(f"tshark -r {path} failed ({status}): {err}")
    packets = []
    for p in json.loads(out or "[]"):
        layers = p["_source"]["layers"]
        packets.append({"interface": layers.get("frame.interface_name", [None])[0],
                        "comments": layers.get("frame.comment", []),
                        "dstport": layers.get("udp.dstport", [None])[0],
                        "length": layers.get("udp.length", [None])[0]})
    return packets


def packet_sites(text):
    """The FUNCTION column's values in the event lines of `trace packet`'s text output."""
    lines = text.splitlines()
    header = next((l for l in lines if l.startswith("TIME ") and " FUNCTION" in l), None)
    if header is None:
        return set()
    at = header.index("FUNCTION")
    return {l[at:].split()[0] for l in lines if re.match(r"^\d\d:\d\d:\d\d\.\d+ ", l) and len(l) > at}


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Replay(harness.KqTestCase):

    def test_replay_as_nobody_without_btf_prints_what_the_live_run_printed(self):
        if missing("gcc", "unshare", "setpriv"):
            self.skipTest(f"needs {missing('gcc', 'unshare', 'setpriv')} (not installed)")
        work = tempfile.mkdtemp(dir=WORKDIR)
        os.chmod(work, 0o755)
        source = harness.write_file(work, "stacks.c", STACK_PROGRAM_SOURCE)
        program = os.path.join(work, "stacks")
        subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", "-o", program, source], check=True)
        script = harness.write_file(work, "four.kq", f"""
trace tracepoint:net:net_dev_queue(skb) where mark == {MARK:#x} select skb->len, skb
trace uprobe:{program}:kq_leaf select ustack
trace syscall:read(return) join syscall:openat as o on tid where comm == "cat" select o.time, return
trace packet where mark == {MARK:#x}
""")
        # kq's standard output must hold only what kq printed.
        workload = write_script(f"workload{os.getpid()}.sh", f"""#!/bin/sh
{program} >/dev/null
cat /etc/hostname >/dev/null
{SEND} >/dev/null
""")
        recording = os.path.join(work, "four.kqr")
        status, live, live_err = kq("record", "-o", recording, script, "-c", workload)
        self.assertEqual(status, 0, live_err)
        readable(recording)

        # The comparison means something only if the live run printed each kind of output.
        self.assertIn("skb = *(0x", live, "no typed dump of the skb")
        self.assertRegex(live, r"(?m)^\s+kq_leaf$", "no user stack with kq_leaf")
        self.assertRegex(live, r"(?m)^\s+kq_middle\+0x[0-9a-f]+$", "no user stack with kq_middle")
        self.assertRegex(live, r"(?m)^\d\d:\d\d:\d\d\.\d+ +\d+ cat .*o\.time=\d+ +return=\d+", "no join row")
        self.assertRegex(live, r"(?m)^packet 0x[0-9a-f]+: \d+ events", "no per-packet view")
        live_summary = SUMMARY.search(live_err)
        self.assertIsNotNone(live_summary, live_err)

        # The workload has exited (kq waited for it); nobody, with no BTF, replays it.
        status, replayed, replay_err = as_nobody([harness.KQ, "replay", recording], hide_btf=True)
        self.assertEqual(status, 0, replay_err)
        self.assertEqual(replayed, live)
        replay_summary = SUMMARY.search(replay_err)
        self.assertIsNotNone(replay_summary, replay_err)
        self.assertEqual(replay_summary.group(0), live_summary.group(0))
        # Every line of the replay's summary (the join's too) is one the live run printed.
        live_lines = live_err.splitlines()
        for line in replay_err.splitlines():
            self.assertIn(line, live_lines, f"replay said what the live run did not:\n{replay_err}")

        status, out, err = as_nobody([harness.KQ, "replay", recording, "-f", "json"], hide_btf=True)
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines()]  # raises on a line that is not JSON
        self.assertTrue(events)
        for line in err.splitlines():
            if line.startswith("{"):
                json.loads(line)
        self.assertEqual(json_summary(out, err)["events"],
                         int(re.match(r"kq: (\d+) events", live_summary.group(0)).group(1)))

    def test_a_new_query_over_a_recording_counts_what_a_live_run_counts(self):
        recording = os.path.join(WORKDIR, "opens.kqr")
        record = subprocess.Popen([harness.KQ, "record", "-q", "-o", recording, "trace syscall:openat", "-d", "6s"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        live = subprocess.Popen([harness.KQ, "trace syscall:openat group by comm select comm, count()",
                                 "-d", "6s", "-f", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2.5)  # both attached (neither prints anything before)
            subprocess.run([sys.executable, OPENER], check=True, timeout=30)
            record_out, record_err = record.communicate(timeout=60)
            live_out, live_err = live.communicate(timeout=60)
        finally:
            for p in (record, live):
                if p.poll() is None:
                    p.kill()
                    p.wait()
        self.assertEqual(record.returncode, 0, record_err)
        self.assertEqual(live.returncode, 0, live_err)
        self.assertEqual(record_out, "", "-q printed events")
        status, out, err = kq("replay", recording, "group by comm select comm, count()", "-f", "json")
        self.assertEqual(status, 0, err)
        live_counts, replay_counts = table_counts(live_out), table_counts(out)
        for comm, n in (("kqopena", 7), ("kqopenb", 13)):
            self.assertEqual(live_counts.get(comm), n, f"live: {live_counts}")
            self.assertEqual(replay_counts.get(comm), n, f"replay: {replay_counts}")

    def test_a_new_table_query_prints_a_table_as_a_live_run_does(self):
        # A live run of a query with only a table prints the table, no header of event
        # lines: a replay's new query should print the same shape.
        recording = os.path.join(WORKDIR, "table.kqr")
        status, _, err = kq("record", "-q", "-o", recording, "trace syscall:openat", "-c", "cat /etc/hostname >/dev/null")
        self.assertEqual(status, 0, err)
        status, live, err = kq("trace syscall:openat group by comm select comm, count()", "-c", "cat /etc/hostname >/dev/null")
        self.assertEqual(status, 0, err)
        status, out, err = kq("replay", recording, "group by comm select comm, count()")
        self.assertEqual(status, 0, err)
        self.assertEqual(live.splitlines()[0].split(), ["comm", "count()"], live)
        self.assertEqual(out.splitlines()[0].split(), ["comm", "count()"], out)
        self.assertEqual(sorted(l.split()[0] for l in out.splitlines()[1:] if l.strip()),
                         sorted(l.split()[0] for l in live.splitlines()[1:] if l.strip()))

    def test_losses_under_a_flood_are_counted_exactly(self):
        recording = os.path.join(WORKDIR, "flood.kqr")
        status, _, err = kq("record", "-q", "--buffer-size", "8k", "-o", recording,
                            'trace syscall:getppid where comm == "kqflood"', "-c", f"{sys.executable} {FLOODER}")
        self.assertEqual(status, 0, err)
        status, out, err = kq("replay", recording, "-f", "json")
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines() if not line.startswith('{"summary"')]
        self.assertTrue(all(e["comm"] == "kqflood" for e in events))
        lost = json_summary(out, err)["lost"]
        self.assertGreater(lost, 0, "an 8k ring buffer did not overflow: nothing tested")
        # Each call is either an event in the recording or one counted lost.
        self.assertEqual(len(events) + lost, FLOOD_CALLS)
        status, info, err = kq("replay", recording, "--info")
        self.assertEqual(status, 0, err)
        self.assertRegex(info, rf"(?m)^lost:\s+{lost}\b")

    def test_max_size_stops_the_session_and_keeps_a_whole_recording(self):
        recording = os.path.join(WORKDIR, "capped.kqr")
        status, _, err = kq("record", "-q", "--max-size", "64k", "-o", recording,
                            'trace syscall:getppid where comm == "kqflood"', "-c", f"{sys.executable} {FLOODER}")
        self.assertEqual(status, 0, err)
        self.assertRegex(err, r"kq record: the recording reached --max-size \(64 KiB\): stopped(; \d+ events after it "
                              r"were not recorded)?\n")
        self.assertLessEqual(os.path.getsize(recording), 64 * 1024)
        # Stopped early, and still a whole recording: its end block is there.
        status, out, err = kq("replay", recording, "-f", "json")
        self.assertEqual(status, 0, err)
        events = [line for line in out.splitlines() if not line.startswith('{"summary"')]
        self.assertGreater(len(events), 0)
        self.assertLess(len(events), FLOOD_CALLS)

    def test_a_replay_query_naming_what_was_not_recorded(self):
        recording = os.path.join(WORKDIR, "names.kqr")
        status, _, err = kq("record", "-q", "-o", recording, "trace syscall:openat select comm, str(filename)",
                            "-c", "cat /etc/hostname >/dev/null")
        self.assertEqual(status, 0, err)
        query = "where flags > 0 select comm"
        status, out, err = kq("replay", recording, query)
        self.assertEqual(status, 1, err)
        self.assertEqual(out, "")
        lines = err.splitlines()
        at = next((i for i, l in enumerate(lines) if "was not recorded" in l), None)
        self.assertIsNotNone(at, err)
        self.assertRegex(lines[at], r"^<query>:1:7: error: `flags` was not recorded \[NotRecorded\]$")
        # The query, and a caret under `flags` (column 7).
        self.assertEqual(lines[at + 1], query)
        self.assertRegex(lines[at + 2], r"^      \^~{4}$")
        note = next((l for l in lines if l.startswith("note:")), "")
        for name in ("time", "cpu", "pid", "tid", "comm", "probe", "str(filename)"):
            self.assertIn(name, note, err)
        # What was recorded still works, written as it was.
        status, out, err = kq("replay", recording, "where str(filename) == \"/etc/hostname\" select comm")
        self.assertEqual(status, 0, err)
        self.assertIn("cat", out)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class DamagedRecordings(harness.KqTestCase):

    @classmethod
    def setUpClass(cls):
        cls.recording = os.path.join(WORKDIR, "small.kqr")
        status, _, err = kq("record", "-q", "-o", cls.recording, "trace syscall:openat", "-c", "cat /etc/hostname >/dev/null")
        assert status == 0, err
        with open(cls.recording, "rb") as f:
            cls.data = f.read()
        status, _, err = kq("replay", cls.recording)
        assert status == 0, err

    def replay_copy(self, name, data):
        path = os.path.join(WORKDIR, name)
        with open(path, "wb") as f:
            f.write(data)
        status, out, err = kq("replay", path)
        # Never a crash: exit 0 or 1, no signal (negative), no abort's message.
        self.assertIn(status, (0, 1), err)
        self.assertIsNone(CRASH.search(err), err)
        return status, err

    def test_a_recording_cut_short_says_at_which_byte(self):
        size = len(self.data)
        for length in (8, 20, 40, size // 2, size - 1):
            with self.subTest(length=length):
                status, err = self.replay_copy(f"cut{length}.kqr", self.data[:length])
                self.assertEqual(status, 1, err)
                self.assertRegex(err, r"(cut short|corrupted) at byte \d+")
                self.assertIn(f"byte {length}", err)

    def test_a_flipped_byte_is_corruption_at_a_byte(self):
        middle = len(self.data) // 2
        damaged = bytearray(self.data)
        damaged[middle] ^= 0xFF
        status, err = self.replay_copy("flipped.kqr", bytes(damaged))
        self.assertEqual(status, 1, err)
        self.assertRegex(err, r"corrupted at byte \d+")
        # Anywhere else, too: the header's reserved zero (bytes 12-15), a block header's
        # kind and flags, the last block's checksummed payload.
        for at in (12, 15, 16, 20, len(self.data) - 5):
            with self.subTest(at=at):
                damaged = bytearray(self.data)
                damaged[at] ^= 0x01
                status, err = self.replay_copy(f"flipped{at}.kqr", bytes(damaged))
                self.assertEqual(status, 1, f"byte {at} flipped, replay exited {status}:\n{err}")
                self.assertRegex(err, r"corrupted at byte \d+|not a recording|is a recording of format")

    def test_a_file_that_is_not_a_recording(self):
        status, err = self.replay_copy("text.kqr", b"hello, this is not a recording\n")
        self.assertEqual(status, 1, err)
        self.assertIn("is not a recording of kq's", err)
        status, err = self.replay_copy("empty.kqr", b"")
        self.assertEqual(status, 1, err)
        self.assertIn("is not a recording of kq's", err)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Formats(harness.KqTestCase):

    def check_pcapng(self, path, sites):
        """`path` holds, at each of `sites` (an interface each), exactly the 3 marked
        datagrams, with the comments kq writes."""
        packets = tshark_packets(path)
        self.assertTrue(packets, f"tshark read no packet from {path}")
        self.assertEqual({p["dstport"] for p in packets}, {"39999"}, "an unmarked datagram was written")
        by_site = collections.defaultdict(list)
        for p in packets:
            by_site[p["interface"]].append(p["length"])
        self.assertEqual(set(by_site), sites)
        for site, lengths in by_site.items():
            self.assertEqual(sorted(lengths), sorted(UDP_LENGTHS), site)
        for p in packets:
            comments = p["comments"]
            self.assertTrue(comments, p)
            self.assertEqual(comments[0], p["interface"], p)
            self.assertTrue(any(re.fullmatch(r"pid \d+ tid \d+ comm python3", c) for c in comments), p)
            self.assertTrue(any(re.fullmatch(r"netns \d+", c) for c in comments), p)
            self.assertTrue(any(re.fullmatch(r"skb 0x[0-9a-f]+", c) for c in comments), p)
            dropped = "drop: SKB_DROP_REASON_NO_SOCKET" in comments
            self.assertEqual(dropped, p["interface"] == "skb:kfree_skb", p)

    def test_pcapng_from_a_replay_and_from_a_live_run(self):
        if missing("tshark", "capinfos", "setpriv"):
            self.skipTest(f"needs {missing('tshark', 'capinfos', 'setpriv')} (not installed)")
        work = tempfile.mkdtemp(dir=WORKDIR)
        os.chmod(work, 0o777)  # nobody's tshark reads, nobody's kq writes here
        recording = os.path.join(work, "packets.kqr")
        query = f"trace packet where mark == {MARK:#x}"
        status, live, err = kq("record", "-o", recording, "--packet-bytes", "128", query, "-c", SEND)
        self.assertEqual(status, 0, err)
        sites = packet_sites(live)
        self.assertIn("skb:kfree_skb", sites, live)
        self.assertIn("net:net_dev_queue", sites, live)

        pcap = os.path.join(work, "replayed.pcapng")
        status, out, err = as_nobody([harness.KQ, "replay", readable(recording), "-f", "pcapng", "-o", pcap])
        self.assertEqual(status, 0, err)
        readable(pcap)
        # tshark as nobody (as root it warns): nothing to say about the file.
        status, out, err = as_nobody(["tshark", "-r", pcap])
        self.assertEqual(status, 0, err)
        self.assertEqual(err, "")
        self.assertEqual(len(out.splitlines()), 3 * len(sites), out)
        self.check_pcapng(pcap, sites)
        info = subprocess.run(["capinfos", pcap], capture_output=True, text=True)
        self.assertEqual(info.returncode, 0, info.stderr)
        interfaces = re.search(r"Number of interfaces in file:\s*(\d+)", info.stdout)
        self.assertIsNotNone(interfaces, info.stdout)
        self.assertEqual(int(interfaces.group(1)), len(sites), info.stdout)

        # A new question keeps the packets: its columns replace the recorded ones, and the
        # packets' places and bytes stay (they were read from freed memory before).
        status, out, err = as_nobody([harness.KQ, "replay", readable(recording), "select pid"])
        self.assertEqual(status, 0, err)
        self.assertEqual(packet_sites(out), sites, out)
        self.assertRegex(out, r"(?m)^TIME .* FUNCTION +pid$", out)
        chosen = os.path.join(work, "chosen.pcapng")
        status, out, err = as_nobody([harness.KQ, "replay", readable(recording), "where pid > 0 select comm",
                                      "-f", "pcapng", "-o", chosen])
        self.assertEqual(status, 0, err)
        readable(chosen)
        self.check_pcapng(chosen, sites)

        # Live: the same packets, straight to standard output.
        live_pcap = os.path.join(work, "live.pcapng")
        with open(live_pcap, "wb") as f:
            proc = subprocess.run([harness.KQ, "-f", "pcapng", query, "-c", SEND], stdout=f,
                                  stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        readable(live_pcap)
        self.check_pcapng(live_pcap, sites)

    def test_folded_stacks(self):
        # A process busy meanwhile, in user mode (its samples there have no kernel stack, and
        # must still be a line of the format) and in system calls (stacks from the syscall
        # entry on, whatever else the machine is doing).
        spinner = subprocess.Popen([sys.executable, "-c",
                                    "import os, time\nend = time.time() + 3\n"
                                    "while time.time() < end:\n    os.stat('/')\n    sum(range(500))"])
        try:
            status, out, err = kq("-f", "folded", "trace profile 99hz group by kstack select count()", "-d", "2s")
        finally:
            spinner.kill()
            spinner.wait()
        self.assertEqual(status, 0, err)
        counted = re.search(r"kq: (\d+) events counted", err)
        self.assertIsNotNone(counted, err)
        lines = out.splitlines()
        self.assertTrue(lines, "no stack")
        bad = [l for l in lines if not re.fullmatch(r"\S+ \d+", l)]
        self.assertEqual(bad, [], "lines not `frame;frame;... COUNT`")
        stacks = [l.rsplit(" ", 1)[0] for l in lines]
        self.assertEqual([s for s in stacks if "+0x" in s], [], "frames with offsets")
        self.assertEqual(len(stacks), len(set(stacks)), "a stack on two lines")
        self.assertEqual(sum(int(l.rsplit(" ", 1)[1]) for l in lines), int(counted.group(1)))
        # Root first: kernel stacks begin at an entry point, not at a leaf.
        roots = {s.split(";")[0] for s in stacks if ";" in s}
        self.assertTrue(roots & {"common_startup_64", "secondary_startup_64", "ret_from_fork_asm",
                                 "entry_SYSCALL_64_after_hwframe", "asm_exc_page_fault",
                                 "asm_sysvec_apic_timer_interrupt", "ret_from_fork", "start_kernel",
                                 "x86_64_start_kernel"}, roots)

    def test_folded_says_what_had_no_stack(self):
        # Events and tables without a stack fold to nothing: said, as -f pcapng says it.
        status, out, err = kq("-f", "folded", "trace syscall:openat where comm == \"cat\" select pid",
                              "-c", "cat /etc/hostname >/dev/null")
        self.assertEqual((status, out), (0, ""), err)
        self.assertRegex(err, r"kq: -f folded writes stacks; \d+ events? had none")

    def test_perfetto_trace_events(self):
        status, out, err = kq("-f", "perfetto", "trace syscall:openat(return) select duration, str(filename)",
                              "-c", "cat /etc/hostname >/dev/null")
        self.assertEqual(status, 0, err)
        trace = json.loads(out)
        self.assertEqual(trace.get("displayTimeUnit"), "ns")
        events = trace["traceEvents"]
        slices = [e for e in events if e.get("ph") == "X"]
        self.assertTrue(any(e["name"] == "syscall:openat" and e["dur"] > 0 for e in slices), events[:5])
        # A slice's dur (µs) is its duration column (ns).
        for e in slices:
            self.assertAlmostEqual(e["dur"], e["args"]["duration"] / 1000, delta=0.001)
        names = [e for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]
        self.assertTrue(any(e["args"]["name"] == "cat" for e in names), names)
        cat = next(e for e in names if e["args"]["name"] == "cat")
        self.assertTrue(any(e["tid"] == cat["tid"] and e["args"].get("str(filename)") == "/etc/hostname"
                            for e in slices), "no slice of cat opening /etc/hostname")


if __name__ == "__main__":
    harness.main(sys.argv)
