#!/usr/bin/env python3
"""Places bpftrace listens that kq reached late: USDT probes of a program the test builds
(gcc's registers and %rip-relative globals, clang's stack slots, a semaphore), against the
values the program itself prints; the session's own `begin` and `end`, and `elapsed`.
Usage: probes_test.py PATH_TO_KQ"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import kq, skip_reason

WORKDIR = tempfile.mkdtemp(prefix="kq-probes-")
SEND_UDP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support", "send_udp.py")

# Three requests, each with an id, a path and a negative short, and a counter read from a
# global; the semaphores the uprobes count up say at the end whether it was traced.
USDT_APP = harness.write_file(WORKDIR, "app.c", r"""
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
unsigned short kqapp_request_semaphore __attribute__((unused, section(".probes")));
unsigned short kqapp_tick_semaphore __attribute__((unused, section(".probes")));
long counter = 7;
struct req { long id; char path[32]; };
__attribute__((noinline)) void serve(struct req *r, int n) {
  for (int i = 0; i < n; i++) {
    r->id = 100 + i;
    counter += i;
    if (KQAPP_REQUEST_ENABLED()) r->path[1] = 'I';
    DTRACE_PROBE3(kqapp, request, r->id, r->path, (short)-i);
    DTRACE_PROBE1(kqapp, tick, counter);
  }
}
int main(int argc, char **argv) {
  struct req r;
  strcpy(r.path, "/index.html");
  serve(&r, argc > 1 ? atoi(argv[1]) : 3);
  printf("enabled=%d\n", kqapp_request_semaphore);
  return 0;
}
""")
# KQAPP_REQUEST_ENABLED() is what a program's own header (dtrace -h) would define.
with open(USDT_APP) as f:
    source = f.read()
with open(USDT_APP, "w") as f:
    f.write(source.replace("#include <sys/sdt.h>",
                           "#include <sys/sdt.h>\n#define KQAPP_REQUEST_ENABLED() __builtin_expect(kqapp_request_semaphore, 0)"))


def build(compiler, *flags):
    """The app built by `compiler`, or None (with the reason) when it cannot be."""
    if not shutil.which(compiler):
        return None, f"{compiler} is not installed"
    if not os.path.exists("/usr/include/x86_64-linux-gnu/sys/sdt.h") and not os.path.exists("/usr/include/sys/sdt.h"):
        return None, "<sys/sdt.h> is missing (Debian's systemtap-sdt-dev)"
    binary = os.path.join(WORKDIR, f"app-{compiler}")
    subprocess.run([compiler, *flags, "-o", binary, USDT_APP], check=True)
    return binary, None


def notes(binary):
    return subprocess.run(["readelf", "-n", binary], capture_output=True, text=True).stdout


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Usdt(harness.KqTestCase):

    def check_requests(self, binary):
        status, out, err = kq("-f", "json", f"trace usdt:{binary}:kqapp:request select arg0, str(arg1), arg2",
                              "-c", f"{binary} 3")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        self.assertEqual([(r["arg0"], r["str(arg1)"], r["arg2"]) for r in rows],
                         [(100, "/Index.html", 0), (101, "/Index.html", -1), (102, "/Index.html", -2)], out)
        self.assertIn("enabled=1", out + err)

    def test_registers_and_a_semaphore_with_gcc(self):
        binary, reason = build("gcc", "-O2")
        if reason:
            self.skipTest(reason)
        self.check_requests(binary)

    def test_stack_slots_with_clang(self):
        binary, reason = build("clang", "-O0")
        if reason:
            self.skipTest(reason)
        self.assertRegex(notes(binary), r"@-\d+\(%rbp\)")  # the arguments are on the stack
        self.check_requests(binary)

    def test_a_global_read_relative_to_the_instruction(self):
        binary, reason = build("gcc", "-O2")
        if reason:
            self.skipTest(reason)
        self.assertIn("counter(%rip)", notes(binary))
        # A position-independent executable: the global is wherever the program was loaded.
        status, out, err = kq("-f", "json", f"trace usdt:{binary}:tick select arg0", "-c", f"{binary} 4")
        self.assertEqual(status, 0, err)
        values = [json.loads(line)["arg0"] for line in out.splitlines() if line.startswith("{")]
        self.assertEqual(values, [7, 8, 10, 13], out)

    def test_arguments_declared_with_their_types(self):
        binary, reason = build("gcc", "-O2")
        if reason:
            self.skipTest(reason)
        status, out, err = kq("-f", "json", f"trace usdt:{binary}:request(long id, char *path) "
                              "where id > 100 select id, str(path)", "-c", f"{binary} 3")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        self.assertEqual([(r["id"], r["str(path)"]) for r in rows], [(101, "/Index.html"), (102, "/Index.html")], out)

    def test_a_program_not_traced_keeps_its_semaphore_at_zero(self):
        binary, reason = build("gcc", "-O2")
        if reason:
            self.skipTest(reason)
        out = subprocess.run([binary, "1"], capture_output=True, text=True).stdout
        self.assertEqual(out, "enabled=0\n")

    def test_list_info_and_errors(self):
        binary, reason = build("gcc", "-O2")
        if reason:
            self.skipTest(reason)
        status, out, err = kq("list", f"usdt:{binary}:*")
        self.assertEqual(status, 0, err)
        self.assertEqual(out.splitlines(), [f"usdt:{binary}:kqapp:request(s64, u64, s16)",
                                            f"usdt:{binary}:kqapp:tick(s64)"])
        status, out, err = kq("info", f"usdt:{binary}:tick")
        self.assertEqual(status, 0, err)
        self.assertIn("semaphore at file offset", out)
        self.assertIn("-8@counter(%rip)", out)
        status, out, err = kq(f"trace usdt:{binary}:kqapp:requests")
        self.assertEqual(status, 1, out)
        self.assertIn("has no USDT probe `kqapp:requests`", err)
        self.assertIn("did you mean `kqapp:request`", err)
        status, out, err = kq(f"trace usdt:/bin/true:anything")
        self.assertEqual(status, 1, out)
        self.assertIn("has no USDT probes", err)

    def test_a_library_probe_of_a_running_program(self):
        # libstdc++'s own probes: each C++ exception thrown, with its type (a typeinfo's address).
        program = os.path.join(WORKDIR, "throws")
        harness.write_file(WORKDIR, "throws.cpp", r"""
#include <stdexcept>
int main() { for (int i = 0; i < 2; i++) { try { throw std::runtime_error("x"); } catch (...) {} } return 0; }
""")
        if not shutil.which("g++"):
            self.skipTest("g++ is not installed")
        subprocess.run(["g++", "-o", program, os.path.join(WORKDIR, "throws.cpp")], check=True)
        lib = subprocess.run(["sh", "-c", f"ldd {program} | awk '/libstdc/ {{print $3}}'"],
                             capture_output=True, text=True).stdout.strip()
        if "stapsdt" not in notes(lib):
            self.skipTest(f"{lib} declares no USDT probes")
        status, out, err = kq("-f", "json", f"trace usdt:{lib}:libstdcxx:throw select arg1 as type",
                              "-c", program)
        self.assertEqual(status, 0, err)
        types = [json.loads(line)["type"] for line in out.splitlines() if line.startswith("{")]
        self.assertEqual(len(types), 2, out)
        self.assertEqual(types[0], types[1], out)
        self.assertNotEqual(types[0], "0x0", out)


def json_rows(out):
    return [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"summary"' not in line]


# Adds 0..4 to a global, so 5 writes and 5 reads, then reads it once more.
WATCHED = harness.write_file(WORKDIR, "watched.c", r"""
#include <stdio.h>
volatile long watched = 1;
long other = 0;
int main(void) { for (int i = 0; i < 5; i++) watched += i; other = watched; printf("%ld\n", other); return 0; }
""")


# Counts its own writes of a global through a hardware breakpoint, with no BPF: prints the
# count (5 where breakpoints work), or why the event would not open.
BREAKPOINT_CHECK = harness.write_file(WORKDIR, "breakpoint_check.c", r"""
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
volatile long target;
int main(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.size = sizeof attr;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = (unsigned long)&target;
  attr.bp_len = HW_BREAKPOINT_LEN_8;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  int fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) { perror("perf_event_open"); return 1; }
  for (int i = 0; i < 5; i++) target += i;
  long long count = 0;
  if (read(fd, &count, sizeof count) != sizeof count) { perror("read"); return 1; }
  printf("%lld\n", count);
  return 0;
}
""")


def breakpoints_missing():
    """Why this machine's hardware breakpoints cannot be tested, or None: some hypervisors
    open a breakpoint event and never fire it (their guests' debug registers are not real)."""
    binary = os.path.join(WORKDIR, "breakpoint_check")
    built = subprocess.run(["gcc", "-o", binary, BREAKPOINT_CHECK], capture_output=True, text=True)
    if built.returncode != 0:
        return f"cannot build the breakpoint check: {built.stderr.strip()}"
    run = subprocess.run([binary], capture_output=True, text=True)
    if run.returncode != 0:
        return f"this machine has no hardware breakpoints: {run.stderr.strip()}"
    if run.stdout.strip() != "5":
        return (f"this machine's hardware breakpoints do not fire: a perf counter on 5 writes "
                f"counted {run.stdout.strip()}, with no BPF involved")
    return None


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Watchpoints(harness.KqTestCase):

    def counts(self, mode):
        missing = breakpoints_missing()
        if missing:
            self.skipTest(missing)
        binary = os.path.join(WORKDIR, "watched")
        subprocess.run(["gcc", "-O1", "-no-pie", "-o", binary, WATCHED], check=True)
        address = subprocess.run(["sh", "-c", f"nm {binary} | awk '/ watched$/ {{print $1}}'"],
                                 capture_output=True, text=True).stdout.strip()
        status, out, err = kq("-f", "json", f"trace watchpoint:0x{address}:8:{mode} group by comm select count()",
                              "-c", binary)
        if status != 0 and "perf event" in err:
            self.skipTest(f"this machine has no hardware breakpoints: {err.strip()}")
        self.assertEqual(status, 0, err)
        [table] = [json.loads(line) for line in out.splitlines() if '"rows"' in line]
        return {r["comm"]: r["count()"] for r in table["rows"]}

    def test_writes_of_a_global(self):
        self.assertEqual(self.counts("w"), {"watched": 5})

    def test_reads_and_writes(self):
        self.assertEqual(self.counts("rw"), {"watched": 11})

    def test_a_user_address_needs_a_process(self):
        status, out, err = kq("trace watchpoint:0x404028:8:w")
        self.assertEqual(status, 1, out)
        self.assertIn("name the process with -p PID", err)

    def test_bad_watchpoints_are_located_errors(self):
        for query, message in [("trace watchpoint:0x404028:3:w", "covers 1, 2, 4 or 8 bytes"),
                               ("trace watchpoint:0x404028:8:q", "not `q`"),
                               ("trace watchpoint:0x404029:8:w", "aligned to 8"),
                               ("trace watchpoint:kaddr(\"kq_no_symbol\"):8:w", "no symbol `kq_no_symbol`")]:
            status, out, err = kq("check", "-e", query)
            self.assertEqual(status, 1, query)
            self.assertIn(message, err, query)


# A process with three threads more, each named, holding a file open; it says it is ready,
# then waits until its standard input closes.
ITERATED = harness.write_file(WORKDIR, "iterated.py", """
import ctypes, os, sys, threading
libc = ctypes.CDLL(None)
def named(name):
    libc.prctl(15, name.encode(), 0, 0, 0)
    done.wait()
done = threading.Event()
threads = [threading.Thread(target=named, args=(f"kqiter-{i}",)) for i in range(3)]
for t in threads:
    t.start()
held = open(sys.argv[1], "w")
print(held.fileno(), flush=True)
sys.stdin.read()
done.set()
""")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Iterators(harness.KqTestCase):

    def setUp(self):
        super().setUp()
        path = os.path.join(WORKDIR, "held-open")
        self.proc = subprocess.Popen([sys.executable, ITERATED, path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.fd = int(self.proc.stdout.readline())
        self.addCleanup(self.proc.wait)
        self.addCleanup(self.proc.stdout.close)
        self.addCleanup(self.proc.stdin.close)

    def rows(self, query):
        status, out, err = kq("-f", "json", query, timeout=30)
        if status != 0 and "BPF iterators" in err:
            self.skipTest(f"this kernel cannot run BPF iterators: {err.strip()}")
        self.assertEqual(status, 0, err)
        return json_rows(out)

    def test_each_thread_of_a_process(self):
        rows = self.rows(f"trace iter:task where task->tgid == {self.proc.pid} select task->pid, task->comm")
        with open(f"/proc/{self.proc.pid}/comm") as f:
            main = f.read().strip()
        self.assertEqual(sorted(r["task->comm"] for r in rows), sorted(["kqiter-0", "kqiter-1", "kqiter-2", main]), rows)
        self.assertEqual(len({r["task->pid"] for r in rows}), 4, rows)
        self.assertEqual({r["comm"] for r in rows}, {"kq"}, rows)  # the iterator runs in kq

    def test_each_open_file_of_a_process(self):
        rows = self.rows(f"trace iter:task_file where task->pid == {self.proc.pid} "
                         "select fd, str(file->f_path.dentry->d_name.name) as name")
        self.assertIn({"fd": self.fd, "name": "held-open"}, [{"fd": r["fd"], "name": r["name"]} for r in rows], rows)
        self.assertEqual(len({r["fd"] for r in rows}), len(rows), rows)  # each descriptor once

    def test_an_unknown_iterator_names_those_there_are(self):
        status, out, err = kq("check", "-e", "trace iter:tsk")
        self.assertEqual(status, 1, out)
        self.assertIn("no BPF iterator `tsk`", err)
        self.assertIn("did you mean `task`?", err)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class ShortBinaryNames(harness.KqTestCase):

    def test_a_library_by_the_name_bpftrace_takes(self):
        # bpftrace's `uprobe:libc:getpid`: the C library on the linker's search path.
        status, out, err = kq("-f", "json", "trace uprobe:libc:getpid where comm == \"python3\" select count()",
                              "-c", f"{sys.executable} -c 'import os; [os.getpid() for _ in range(7)]'")
        self.assertEqual(status, 0, err)
        [table] = [json.loads(line) for line in out.splitlines() if '"rows"' in line]
        self.assertGreaterEqual(table["rows"][0]["count()"], 7, out)
        status, out, err = kq("--dump", "plan", "trace uprobe:c:getpid")
        self.assertEqual(status, 0, err)
        self.assertIn("libc.so.6:getpid", out)

    def test_an_unknown_name_says_where_it_looked(self):
        status, out, err = kq("trace uprobe:libkqnothing:f")
        self.assertEqual(status, 1, out)
        self.assertIn("no shared library or program is named `libkqnothing`", err)
        self.assertIn("search path", err)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class SessionHooks(harness.KqTestCase):

    def test_begin_alone_prints_once_and_ends(self):
        # bpftrace's tutorial, lesson 2: `BEGIN { printf("hello world\n"); }`.
        status, out, err = kq("trace begin select \"hello world\"", timeout=20)
        self.assertEqual(status, 0, err)
        self.assertEqual(out.splitlines()[1].split()[-2:], ["hello", "world"], out)
        self.assertEqual(len(out.splitlines()), 2, out)

    def test_begin_and_end_frame_the_events_and_run_in_kq(self):
        workload = "python3 -c 'import os\nfor _ in range(3): os.getppid()'"
        status, out, err = kq("-f", "json", "trace begin select \"start\" as at, elapsed\n"
                              "trace syscall:getppid select \"call\" as at, elapsed\n"
                              "trace end select \"end\" as at, elapsed", "-c", workload)
        self.assertEqual(status, 0, err)
        rows = json_rows(out)
        # The shell that runs the command calls getppid too.
        self.assertEqual([r["at"] for r in rows if r["comm"] != "sh"], ["start", "call", "call", "call", "end"], out)
        # begin and end run in kq itself, whatever process -c follows.
        self.assertEqual({r["comm"] for r in rows if r["at"] != "call"}, {"kq"}, out)
        self.assertLessEqual({r["comm"] for r in rows if r["at"] == "call"}, {"python3", "sh"}, out)
        self.assertNotEqual(rows[0]["pid"], rows[-2]["pid"], out)
        # elapsed: from the load, growing, in nanoseconds.
        elapsed = [r["elapsed"] for r in rows]
        self.assertEqual(elapsed, sorted(elapsed), out)
        self.assertLess(elapsed[0], 1_000_000_000, out)

    def test_elapsed_against_the_wall_clock(self):
        status, out, err = kq("-f", "json", "-d", "1s", "trace end select elapsed")
        self.assertEqual(status, 0, err)
        [row] = json_rows(out)
        self.assertGreaterEqual(row["elapsed"], 1_000_000_000, out)
        self.assertLess(row["elapsed"], 3_000_000_000, out)

    def test_end_runs_on_ctrl_c(self):
        proc = subprocess.Popen([harness.KQ, "-f", "json", "trace begin select \"ready\" as at\n"
                                 "trace syscall:getppid select count()\n"
                                 "trace end select \"bye\" as at"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()
        self.assertIn('"ready"', first)
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn('"at":"bye"', rest)

    def test_bpftrace_spelling_says_what_kq_writes(self):
        status, out, err = kq("check", "-e", "BEGIN { printf(\"hi\\n\"); }")
        self.assertEqual(status, 1, out)
        self.assertIn("trace begin", err)


# Writes of 3, 11, 200 and 2000 bytes (`x`s ending in `!`) to a pipe, one a call.
WRITER = harness.write_file(WORKDIR, "writes.py", """
import os
r, w = os.pipe()
for n in (3, 11, 200, 2000):
    os.write(w, b"x" * (n - 1) + b"!")
    os.read(r, n)
""")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RunTimeLengths(harness.KqTestCase):

    def writes(self, select):
        status, out, err = kq("-f", "json", f"trace syscall:write where comm == \"python3\" select count, {select}",
                              "-c", f"{sys.executable} {WRITER}")
        self.assertEqual(status, 0, err)
        return json_rows(out)

    def test_buf_keeps_as_many_bytes_as_the_call_wrote(self):
        rows = self.writes("buf(buf, count, 1024) as data")
        self.assertEqual([(r["count"], r["data"]) for r in rows],
                         [(3, "xx!"), (11, "x" * 10 + "!"), (200, "x" * 199 + "!"), (2000, "x" * 1024)])

    def test_buf_without_a_maximum_keeps_64(self):
        rows = self.writes("buf(buf, count) as data")
        self.assertEqual([len(r["data"]) for r in rows], [3, 11, 64, 64])

    def test_str_stops_at_the_length(self):
        rows = self.writes("str(buf, count - 1, 512) as text")
        # Past its max, a length keeps max + 1 bytes: the last says the string went on (…).
        self.assertEqual([r["text"] for r in rows], ["xx", "x" * 10, "x" * 199, "x" * 513 + "…"])

# An XDP program that drops UDP (IPv4's protocol byte, past a 14-byte Ethernet header) and a
# TC one that drops nothing; kq traces them as `bpf:` probes. The XDP function's name is
# longer than the 15 bytes the kernel keeps, so kq must find it by its BTF name.
XDP_PROGRAM = harness.write_file(WORKDIR, "xdp.c", r"""
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#define SEC(name) __attribute__((section(name), used))
SEC("xdp") int kqtest_drop_udp_long(struct xdp_md *ctx) {
  unsigned char *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
  if (data + 24 > end) return XDP_PASS;
  return data[23] == 17 ? XDP_DROP : XDP_PASS;
}
char _license[] SEC("license") = "GPL";
""")
TC_PROGRAM = harness.write_file(WORKDIR, "tc.c", r"""
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#define SEC(name) __attribute__((section(name), used))
SEC("tc") int kqtest_tc_ok(struct __sk_buff *skb) { return skb->len > 100000 ? TC_ACT_SHOT : TC_ACT_OK; }
char _license[] SEC("license") = "GPL";
""")


def bpf_object(source):
    """`source` compiled for the BPF target with BTF, or None (with the reason)."""
    if not shutil.which("clang"):
        return None, "clang is not installed"
    out = source[:-2] + ".o"
    built = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu",
                            "-c", source, "-o", out], capture_output=True, text=True)
    if built.returncode != 0:
        return None, f"clang cannot build a BPF object here: {built.stderr.strip()}"
    return out, None


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class BpfPrograms(harness.KqTestCase):
    """`bpf:` on programs the test attaches to `lo` in a network namespace of its own:
    XDP (generic) and TC (clsact ingress)."""

    @classmethod
    def setUpClass(cls):
        cls.netns = f"kqbpf{os.getpid()}"
        xdp, why = bpf_object(XDP_PROGRAM)
        tc, why_tc = bpf_object(TC_PROGRAM)
        if not xdp or not tc:
            raise unittest.SkipTest(why or why_tc)
        ip = ["ip", "-n", cls.netns]
        subprocess.run(["ip", "netns", "add", cls.netns], check=True)
        subprocess.run([*ip, "link", "set", "lo", "up"], check=True)
        subprocess.run([*ip, "link", "set", "dev", "lo", "xdpgeneric", "obj", xdp, "sec", "xdp"], check=True)
        subprocess.run(["tc", "-n", cls.netns, "qdisc", "add", "dev", "lo", "clsact"], check=True)
        subprocess.run(["tc", "-n", cls.netns, "filter", "add", "dev", "lo", "ingress", "bpf", "da", "obj", tc,
                        "sec", "tc"], check=True)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["ip", "netns", "del", cls.netns])

    def program_id(self, name):
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True).stdout)
        ids = [p["id"] for p in progs if p.get("name") == name]  # bpftool names it by its BTF
        self.assertEqual(len(ids), 1, progs)
        return ids[0]

    def test_list_shows_each_program_typed_by_its_btf(self):
        status, out, err = kq("list", "bpf:kqtest_*")
        self.assertEqual(status, 0, err)
        xdp = self.program_id("kqtest_drop_udp_long")
        tc = self.program_id("kqtest_tc_ok")
        self.assertIn(f"bpf:kqtest_drop_udp_long(struct xdp_buff *ctx) -> enum xdp_action  (xdp, id {xdp}, "
                      "kernel name kqtest_drop_udp)", out)
        self.assertIn(f"bpf:kqtest_tc_ok(struct sk_buff *skb) -> enum tc_action  (sched_cls, id {tc})", out)

    def test_info_names_the_verdicts(self):
        status, out, err = kq("info", "bpf:kqtest_drop_udp_long")
        self.assertEqual(status, 0, err)
        self.assertIn(f"id {self.program_id('kqtest_drop_udp_long')}", out)
        for verdict in ("XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT"):
            self.assertIn(verdict, out)

    def test_queries_check_against_the_programs_types(self):
        xdp = self.program_id("kqtest_drop_udp_long")
        for query in ["trace bpf:kqtest_drop_udp_long where return == XDP_DROP select ctx->data_end - ctx->data",
                      f"trace bpf:{xdp} select return",
                      "trace bpf:kqtest_drop_udp select ctx->data",  # the kernel keeps 15 bytes of the name
                      "trace bpf:kqtest_tc_ok where return != TC_ACT_OK select skb->len, skb->mark"]:
            status, out, err = kq("check", "-e", query)
            self.assertEqual(status, 0, f"{query}: {err}")
        status, out, err = kq("check", "-e", "trace bpf:kqtest_tc_ok where return == XDP_DROP")
        self.assertEqual(status, 1, out)
        self.assertIn("`return` is `enum tc_action` but `XDP_DROP` is `enum xdp_action`", err)
        status, out, err = kq("check", "-e", "trace bpf:kqtest_drop_udp_lng")
        self.assertEqual(status, 1, out)
        self.assertIn("did you mean `kqtest_drop_udp_long`?", err)

    def run_or_skip(self, *args):
        """Runs kq; where the kernel refuses a trampoline on a BPF program (fentry), checks
        that kq says so and skips, naming what is missing."""
        status, out, err = kq(*args, timeout=60)
        if status == 1 and "cannot attach to bpf:" in err:
            self.assertIn("fentry", err)
            self.assertIn("trampolines", err)
            self.assertNotIn("Segmentation", err)
            self.skipTest("this kernel does not attach fentry/fexit to BPF programs: " + err.strip().splitlines()[0])
        return status, out, err

    def test_the_verdict_of_each_packet(self):
        status, out, err = self.run_or_skip(
            "-f", "json", "-c", f"ip netns exec {self.netns} {sys.executable} {SEND_UDP}",
            "trace bpf:kqtest_drop_udp_long where return == XDP_DROP select return, ctx->data_end - ctx->data as len")
        self.assertEqual(status, 0, err)
        rows = json_rows(out)
        # send_udp.py's five datagrams, each 14 + 20 + 8 bytes of headers and its payload.
        self.assertEqual(sorted(r["len"] for r in rows), sorted(42 + n for n in (200, 300, 50, 400, 500)), rows)
        self.assertEqual({r["return"] for r in rows}, {"XDP_DROP"}, rows)

    def test_dry_run_says_whether_it_attaches(self):
        status, out, err = self.run_or_skip("--dry-run", "trace bpf:kqtest_tc_ok select return")
        self.assertEqual(status, 0, err)
        self.assertIn("fexit", out + err)



RECURSIVE = harness.write_file(WORKDIR, "recursive.c", r"""
__attribute__((noinline)) int rec(int n) { return n == 0 ? 0 : 1 + rec(n - 1); }
int main(void) { return rec(3) == 3 ? 0 : 1; }
""")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Recursion(harness.KqTestCase):

    def test_each_return_of_a_recursive_function_meets_its_own_call(self):
        # rec(3) calls rec(2), rec(1), rec(0) on one thread: four calls in flight at once,
        # each exit paired with its own entry (by the call's stack pointer), as bpftrace's
        # uretprobe shows four returns.
        binary = os.path.join(WORKDIR, "recursive")
        subprocess.run(["gcc", "-O1", "-fno-optimize-sibling-calls", "-fno-inline", "-o", binary, RECURSIVE],
                       check=True)
        status, out, err = kq("-f", "json", f"trace uprobe:{binary}:rec(int n) select n, return", "-c", binary)
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines() if '"n"' in line]
        self.assertEqual([(e["n"], e["return"]) for e in events], [(0, 0), (1, 1), (2, 2), (3, 3)], out)
        self.assertNotIn("no entry seen", err)
        status, out, err = kq("-f", "json", f"trace uretprobe:{binary}:rec select retval", "-c", binary)
        self.assertEqual(status, 0, err)
        self.assertEqual([json.loads(line)["retval"] for line in out.splitlines() if '"retval"' in line],
                         [0, 1, 2, 3], out)

    def test_a_uretprobe_fires_as_its_function_returns_without_reading_return(self):
        # nap(30) and nap(40) sleep: each return is that long after its call, whether the
        # query reads `return` or not (a uretprobe that reads nothing of the exit was
        # attached at the entry).
        binary = os.path.join(WORKDIR, "nap")
        subprocess.run(["gcc", "-O1", "-fno-inline", "-o", binary, NAP], check=True)
        status, out, err = kq("-f", "json", "-e", f"trace uprobe:{binary}:nap as enter select time\n"
                              f"trace uretprobe:{binary}:nap as leave select time", "-c", binary)
        self.assertEqual(status, 0, err)
        events = [json.loads(line) for line in out.splitlines() if '"query_name"' in line]
        entries = [e["time_ns"] for e in events if e["query_name"] == "enter"]
        exits = [e["time_ns"] for e in events if e["query_name"] == "leave"]
        self.assertEqual(len(entries), 2, out)
        self.assertEqual(len(exits), 2, out)
        naps = [(leave - enter) / 1e6 for enter, leave in zip(entries, exits)]
        self.assertGreaterEqual(naps[0], 30, naps)
        self.assertGreaterEqual(naps[1], 40, naps)

    def test_a_glob_of_syscall_exits_names_each_and_reads_its_ret(self):
        # nap sleeps twice through clock_nanosleep: a glob of two exit tracepoints names
        # each as written and reads the `ret` both records have.
        binary = os.path.join(WORKDIR, "nap")
        subprocess.run(["gcc", "-O1", "-fno-inline", "-o", binary, NAP], check=True)
        status, out, err = kq("-f", "json", "trace tracepoint:syscalls:sys_exit_*nanosleep where comm == \"nap\" "
                              "group by probe select count(), max(ret)", "-c", binary)
        self.assertEqual(status, 0, err)
        rows = [row for line in out.splitlines() if '"rows"' in line for row in json.loads(line)["rows"]]
        self.assertEqual(rows, [{"probe": "tracepoint:syscalls:sys_exit_clock_nanosleep", "count()": 2,
                                 "max(ret)": 0}], out)


NAP = harness.write_file(WORKDIR, "nap.c", r"""
#include <time.h>
__attribute__((noinline)) int nap(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, 0);
  return ms;
}
int main(void) { return nap(30) + nap(40) == 70 ? 0 : 1; }
""")


if __name__ == "__main__":
    harness.main(sys.argv)
