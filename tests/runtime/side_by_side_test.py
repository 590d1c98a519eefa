#!/usr/bin/env python3
"""The side-by-side page (docs/side-by-side.md): ten tasks, each done in kq and in bpftrace.
The commands are read from the page, not kept here: each task's kq command and bpftrace
command run on the page's workloads (written to a directory of their own, where the
commands run), and both outputs must give the workload's known answer (the file opened, the
errno, the count of calls, the histogram's bucket, the sleep's latency, the parent of a
process, the signal, the packets, the context switches, a uprobe'd function's arguments).
The outputs printed on the page must show the same answers. Needs root and a kernel with
BTF: without them every test is skipped, saying why; without bpftrace the bpftrace half of
each task is.

Usage: side_by_side_test.py PATH_TO_KQ [unittest arguments]
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import examples_support
import harness
from examples_support import BPFTRACE, bpftrace_histograms, bpftrace_rows

PAGE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                                     "side-by-side.md"))
TIMEOUT = 30  # seconds, for each command; every one ends in about a second

# `<!-- MARKER -->` on the line before a fenced block: what the block is.
BLOCK = re.compile(r"^<!-- (.+?) -->\n```[^\n]*\n(.*?)^```$", re.M | re.S)


def page_blocks():
    """The page's marked blocks, by marker: `task N: kq`, `task N: bpftrace`, `task N: kq
    output`, `task N: bpftrace output`, `file: NAME`, `setup`."""
    with open(PAGE) as f:
        text = f.read()
    blocks = {}
    for marker, body in BLOCK.findall(text):
        if marker in blocks:
            raise AssertionError(f"{PAGE} has two blocks marked `{marker}`")
        blocks[marker] = body
    return blocks


def command(blocks, task, tool):
    """Task `task`'s command for `tool` as arguments, the tool's name first."""
    argv = shlex.split(blocks[f"task {task}: {tool}"])
    if argv[:1] != [tool]:
        raise AssertionError(f"task {task}'s {tool} command does not start with `{tool}`: {argv}")
    return argv


def kq_histograms(output):
    """kq's printed histograms: {group key: {bucket label: count}} for non-empty buckets. Each
    group's row starts its line; its histograms follow, indented, one bucket a line."""
    hists, key = {}, None
    for line in output.splitlines():
        m = re.match(r"  (\[.*?\]|\[.*?\)|\(.*?\])\s+(\d+) \|", line)
        if m:
            if key is not None and int(m.group(2)):
                hists[key][m.group(1)] = int(m.group(2))
        elif line and not line.startswith(" ") and not line.startswith("kq:"):
            key = line.split()[0]
            hists[key] = {}
    return hists


@unittest.skipIf(harness.skip_reason() is not None, harness.skip_reason() or "")
class SideBySide(harness.KqTestCase):
    @classmethod
    def setUpClass(cls):
        cls.blocks = page_blocks()
        cls.workdir = tempfile.mkdtemp(prefix="kq-side-by-side-")
        for marker, body in cls.blocks.items():
            if marker.startswith("file: "):
                harness.write_file(cls.workdir, marker[len("file: "):], body)
        # The commands name the workloads by relative paths, as the page shows them.
        harness.KQ = os.path.abspath(harness.KQ)
        cls.cwd = os.getcwd()
        os.chdir(cls.workdir)
        cls.setup_failure = None
        for line in cls.blocks.get("setup", "").splitlines():
            argv = shlex.split(line)
            if not argv:
                continue
            if shutil.which(argv[0]) is None:
                cls.setup_failure = f"`{line}` cannot run here: there is no {argv[0]}"
                continue
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise AssertionError(f"the page's setup `{line}` failed:\n{done.stderr}")

    @classmethod
    def tearDownClass(cls):
        os.chdir(cls.cwd)
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def task(self, n, check_kq, check_bpftrace, needs_setup=False):
        """Runs task `n`'s two commands and checks each output; then checks the outputs the
        page prints. The kq half always runs; the bpftrace half is skipped, saying why,
        when bpftrace is not installed."""
        for tool in ["kq", "bpftrace"]:
            self.assertIn(f"task {n}: {tool}", self.blocks, f"{PAGE} has no {tool} command for task {n}")
        with self.subTest(tool="kq"):
            if needs_setup and self.setup_failure:
                self.skipTest(self.setup_failure)
            status, out, err = harness.kq(*command(self.blocks, n, "kq")[1:], timeout=TIMEOUT)
            self.assertEqual(status, 0, f"kq exited with {status}:\n{err}\n{out[-3000:]}")
            try:
                check_kq(out)
            except AssertionError as e:
                raise AssertionError(f"{e}\nkq's standard error:\n{err[-2000:]}") from None
        with self.subTest(tool="bpftrace"):
            if BPFTRACE is None:
                self.skipTest("bpftrace is not installed: nothing to compare with")
            if needs_setup and self.setup_failure:
                self.skipTest(self.setup_failure)
            argv = [BPFTRACE, *command(self.blocks, n, "bpftrace")[1:]]
            try:
                done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
            except subprocess.TimeoutExpired as e:
                raise AssertionError(f"bpftrace did not end in {TIMEOUT} s: {e.stderr}") from None
            self.assertEqual(done.returncode, 0, f"bpftrace exited with {done.returncode}:\n{done.stderr}")
            try:
                check_bpftrace(done.stdout)
            except AssertionError as e:
                raise AssertionError(f"{e}\nbpftrace's standard error:\n{done.stderr[-2000:]}") from None
        with self.subTest(tool="the page's outputs"):
            for tool, check in [("kq", check_kq), ("bpftrace", check_bpftrace)]:
                self.assertIn(f"task {n}: {tool} output", self.blocks, f"{PAGE} shows no {tool} output for task {n}")
                try:
                    check(self.blocks[f"task {n}: {tool} output"])
                except AssertionError as e:
                    raise AssertionError(f"the page's {tool} output of task {n}: {e}") from None

    def test_01_files_a_command_opens(self):
        def kq(out):
            rows = bpftrace_rows(out, r"\S+\s+\d+\s+(\S+)\s+(/\S+)$")  # TIME PID comm str(filename)
            self.assertIn(("cat", "/etc/hostname"), rows, out)

        def bt(out):
            self.assertIn(("cat", "/etc/hostname"), bpftrace_rows(out, r"(\S+)\s+(/\S+)$"), out)
        self.task(1, kq, bt)

    def test_02_failed_opens_with_their_errno(self):
        def kq(out):
            rows = bpftrace_rows(out, r"\S+\s+\d+\s+(\S+)\s+(/\S+)\s+(-\d+ E[A-Z]+)$")
            self.assertIn(("cat", "/nonexistent", "-2 ENOENT"), rows, out)
            self.assertNotIn("/etc/hostname", [path for _, path, _ in rows], out)

        def bt(out):
            rows = bpftrace_rows(out, r"(\S+)\s+(/\S+)\s+(-?\d+)$")
            self.assertIn(("cat", "/nonexistent", "-2"), rows, out)
            self.assertNotIn("/etc/hostname", [path for _, path, _ in rows], out)
        self.task(2, kq, bt)

    def test_03_system_calls_by_process(self):
        # dd copies 5,000 blocks: a read and a write each, and the calls of its start.
        def kq(out):
            counts = dict(bpftrace_rows(out, r"(\S+)\s+(\d+)$"))
            self.assertGreaterEqual(int(counts.get("dd", 0)), 10000, out)

        def bt(out):
            counts = dict(bpftrace_rows(out, r"@\[(.*)\]: (\d+)$"))
            self.assertGreaterEqual(int(counts.get("dd", 0)), 10000, out)
        self.task(3, kq, bt)

    def test_04_a_histogram_of_read_sizes(self):
        # dd reads 1,000 blocks of 4 KiB.
        def kq(out):
            self.assertGreaterEqual(kq_histograms(out).get("dd", {}).get("[4K, 8K)", 0), 1000, out)

        def bt(out):
            self.assertGreaterEqual(bpftrace_histograms(out).get("dd", {}).get(4096, 0), 1000, out)
        self.task(4, kq, bt)

    def test_05_how_long_a_system_call_took(self):
        # sleep 0.2: 200 ms, and a little more on a busy machine.
        def kq(out):
            ms = [int(m) for (m,) in bpftrace_rows(out, r"\S+\s+\d+\s+sleep\s+(\d+)$")]
            self.assertEqual(len(ms), 1, out)
            self.assertIn(ms[0], range(190, 400), out)

        def bt(out):
            ms = [int(m) for (m,) in bpftrace_rows(out, r"sleep\s+(\d+) ms$")]
            self.assertEqual(len(ms), 1, out)
            self.assertIn(ms[0], range(190, 400), out)
        self.task(5, kq, bt)

    def test_06_processes_started(self):
        # timeout forks, and its child executes /bin/echo: echo's parent is timeout.
        def parent_of_echo_is_timeout(out, rows, timeout_args):
            pids = {args: (pid, ppid) for pid, ppid, args in rows}
            self.assertIn(timeout_args, pids, out)
            self.assertIn("/bin/echo hello world", pids, out)
            self.assertEqual(pids["/bin/echo hello world"][1], pids[timeout_args][0], out)

        def kq(out):
            rows = bpftrace_rows(out, r"\S+\s+(\d+)\s+\S+\s+(\d+)\s+(.*?)\s*$")  # TIME PID COMM ppid join(argv)
            parent_of_echo_is_timeout(out, rows, "timeout 5 /bin/echo hello world")

        def bt(out):
            parent_of_echo_is_timeout(out, bpftrace_rows(out, r"(\d+)\s+(\d+)\s+(.*?)\s*$"),
                                      "/usr/bin/timeout 5 /bin/echo hello world")
        self.task(6, kq, bt)

    def test_07_signals_sent(self):
        # timeout sends SIGUSR1 (10) to sleep, then to its own process group (0).
        def kq(out):
            rows = bpftrace_rows(out, r"\S+\s+\d+\s+timeout\s+(SIG\w+)\s+(\d+)\s+(\S+)$")
            sent = [(sig, int(target), result) for sig, target, result in rows]
            self.assertIn("SIGUSR1", [sig for sig, target, _ in sent if target > 0], out)
            self.assertIn(("SIGUSR1", 0, "0"), sent, out)
            self.assertTrue(all(result == "0" for _, _, result in sent), out)

        def bt(out):
            rows = [(int(sig), int(target)) for sig, target in bpftrace_rows(out, r"timeout\s+sig (\d+) to (-?\d+)$")]
            self.assertTrue(any(sig == 10 and target > 0 for sig, target in rows), out)
            self.assertIn((10, 0), rows, out)
        self.task(7, kq, bt)

    def test_08_udp_packets_to_a_port(self):
        # logger sends each of messages.txt's lines to 127.0.0.1:47123: a datagram each.
        lines = len([l for l in self.blocks["file: messages.txt"].splitlines() if l.strip()])

        def kq(out):
            self.assertEqual([int(n) for n, _ in bpftrace_rows(out, r"lo\s+(\d+)\s+(\d+)$")], [lines], out)

        def bt(out):
            self.assertEqual(bpftrace_rows(out, r"@packets\[lo\]: (\d+)$"), [(str(lines),)], out)
        self.task(8, kq, bt)

    def test_09_context_switches_by_command(self):
        # naps.py sleeps 20 times: 20 switches away from python3 at least.
        def kq(out):
            counts = dict(bpftrace_rows(out, r"(\S+)\s+(\d+)$"))
            self.assertGreaterEqual(int(counts.get("python3", 0)), 20, out)

        def bt(out):
            counts = dict(bpftrace_rows(out, r"@switches\[(.*)\]: (\d+)$"))
            self.assertGreaterEqual(int(counts.get("python3", 0)), 20, out)
        self.task(9, kq, bt)

    def test_10_a_user_space_functions_arguments(self):
        # fruits weighs three apples (150 + 140 + 160 g), a pear (180 g) and a plum (40 g).
        basket = {"apple": (3, 450), "pear": (1, 180), "plum": (1, 40)}

        def kq(out):
            rows = {f: (int(c), int(g)) for f, c, g in bpftrace_rows(out, r"(apple|pear|plum)\s+(\d+)\s+(\d+)$")}
            self.assertEqual(rows, basket, out)

        def bt(out):
            calls = dict(bpftrace_rows(out, r"@calls\[(\w+)\]: (\d+)$"))
            grams = dict(bpftrace_rows(out, r"@grams\[(\w+)\]: (\d+)$"))
            self.assertEqual({f: (int(calls[f]), int(grams.get(f, -1))) for f in calls}, basket, out)
        self.task(10, kq, bt, needs_setup=True)

    def test_the_page_has_ten_tasks(self):
        tasks = sorted({int(m.group(1)) for m in map(re.compile(r"task (\d+): ").match, self.blocks) if m})
        self.assertEqual(tasks, list(range(1, 11)))
        tested = [name for name in dir(self) if re.match(r"test_\d\d_", name)]
        self.assertEqual(len(tested), len(tasks), "every task on the page has a test here")


if __name__ == "__main__":
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(examples_support.WORKDIR, ignore_errors=True)
