#!/usr/bin/env python3
"""C through Clang in the running kernel: names from the machine's C headers (`macros`)
printed for real events, checked against values this test reads from the headers itself.

Usage: c_test.py PATH_TO_KQ
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import kq, skip_reason

WORKDIR = tempfile.mkdtemp(prefix="kq-c-")

# Sends itself SIGUSR1 twice and SIGUSR2 once with kill(2).
SIGNALLER = harness.write_file(WORKDIR, "signal_self.py", """
import os, signal
for s in (signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, lambda *args: None)
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGUSR1):
    os.kill(os.getpid(), s)
""")


def header_defines(header, pattern):
    """{name: value} of the `#define NAME NUMBER` lines of a system header matching `pattern`."""
    for base in ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"):
        path = os.path.join(base, header)
        if os.path.exists(path):
            with open(path) as f:
                return {m.group(1): int(m.group(2), 0)
                        for m in re.finditer(r"^#define\s+(" + pattern + r")\s+(\d+)\b", f.read(), re.M)}
    raise unittest.SkipTest(f"no {header} on this machine (linux-libc-dev)")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Macros(harness.KqTestCase):

    def test_signal_names_from_asm_signal_h(self):
        signals = header_defines("asm/signal.h", r"SIG[A-Z0-9]+")
        self.assertEqual(signals["SIGKILL"], 9)
        # `-c`: only the command's own kill(2) calls.
        query = ('let sigs = macros("asm/signal.h", "SIG") '
                 'trace tracepoint:syscalls:sys_enter_kill '
                 'group by sigs[sig] select sigs[sig] as signal, count()')
        status, out, err = kq("-f", "json", query, "-c", f"{sys.executable} {SIGNALLER}")
        self.assertEqual(status, 0, err)
        rows = json.loads(out.splitlines()[-1])["rows"]
        self.assertEqual(sorted((r["signal"], r["count()"]) for r in rows),
                         [("SIGUSR1", 2), ("SIGUSR2", 1)], out)
        # The numbers are the header's.
        status, out, err = kq("-f", "json", query.replace("group by sigs[sig] select sigs[sig] as signal, count()",
                                                          "select sig, sigs[sig] as name"),
                              "-c", f"{sys.executable} {SIGNALLER}")
        self.assertEqual(status, 0, err)
        for line in out.splitlines():
            row = json.loads(line)
            self.assertEqual(signals[row["name"]], row["sig"], line)

    def test_capability_names_match_the_header(self):
        caps = header_defines("linux/capability.h", r"CAP_[A-Z_]+")
        self.assertEqual(caps["CAP_SYS_ADMIN"], 21)
        # Every capability by its number, printed by a real event (kill(2) of signal 0).
        names = ", ".join(f"caps[{v}] as c{v}" for v in sorted(set(caps.values()))
                          if v != caps.get("CAP_LAST_CAP"))
        query = ('let caps = macros("linux/capability.h", "CAP_") '
                 f'trace tracepoint:syscalls:sys_enter_kill where sig == 0 select {names} limit 1')
        check = f"{sys.executable} -c 'import os; os.kill(os.getpid(), 0)'"
        status, out, err = kq("-f", "json", query, "-c", check)
        self.assertEqual(status, 0, err)
        row = json.loads(out.splitlines()[0])
        for name, value in caps.items():
            if name != "CAP_LAST_CAP":
                self.assertEqual(row[f"c{value}"], name)
        # A name compared in `where` is its number, compared in the kernel.
        query = ('let caps = macros("linux/capability.h", "CAP_") '
                 'trace tracepoint:syscalls:sys_enter_kill where caps[sig] == "CAP_SYS_ADMIN" '
                 'select sig limit 1')
        status, out, err = kq("--dump", "types", query)
        self.assertEqual(status, 0, err)
        self.assertIn("compares the key with 21", out)


APP_HEADER = harness.write_file(WORKDIR, "app.h", """
#include <stdint.h>
enum app_kind { APP_GET = 1, APP_PUT = 2 };
struct app_req {
  uint32_t id;
  enum app_kind kind;
  uint64_t len;
  const char *path;
  char host[16];
};
""")

APP_SOURCE = harness.write_file(WORKDIR, "app.c", """
#include <stdio.h>
#include "app.h"
__attribute__((noinline)) int handle_request(struct app_req *r, long weight) {
  return (int)(r->len & 0xff) + r->path[0] + (int)weight;
}
int main(void) {
  struct app_req a = {1, APP_GET, 100, "/small", "alpha"};
  struct app_req b = {2, APP_PUT, 8192, "/big/upload", "beta"};
  struct app_req c = {3, APP_GET, 5000, "/big/download", "gamma"};
  printf("%d\\n", handle_request(&a, 7) + handle_request(&b, 8) + handle_request(&c, 9));
  return 0;
}
""")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class HeaderTypes(harness.KqTestCase):

    def test_uprobe_typed_through_a_header(self):
        binary = os.path.join(WORKDIR, "app")
        subprocess.run(["gcc", "-O1", "-g0", "-o", binary, APP_SOURCE], check=True)
        sections = subprocess.run(["readelf", "-S", binary], capture_output=True, text=True).stdout
        self.assertNotIn(".debug_info", sections, "the program must have no debug information")
        self.assertNotIn(".BTF", sections)
        script = harness.write_file(WORKDIR, "app.kq", f"""
use "app.h"
trace uprobe:{binary}:handle_request(struct app_req *req, long weight) where req->len > 4096
  select req->id, req->kind, req->len, str(req->path) as path, str(req->host) as host, weight
trace uprobe:{binary}:handle_request(struct app_req *req) where req->kind == APP_PUT select req->id
""")
        status, out, err = kq("-f", "json", script, "-c", binary)
        self.assertEqual(status, 0, err)
        # The program prints its sum (401) among kq's lines; the last is kq's summary.
        rows = [json.loads(line) for line in out.splitlines() if line.startswith('{"time"')]
        # The header's enumerator, compared: only the PUT request.
        self.assertEqual([r["req->id"] for r in rows if "path" not in r], [2], out)
        rows = [r for r in rows if "path" in r]
        self.assertEqual([(r["req->id"], r["req->kind"], r["req->len"], r["path"], r["host"], r["weight"])
                          for r in rows],
                         [(2, "APP_PUT", 8192, "/big/upload", "beta", 8),
                          (3, "APP_GET", 5000, "/big/download", "gamma", 9)],
                         out)


SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support")

HELPERS = harness.write_file(WORKDIR, "helpers.c", """
typedef unsigned int u32;
static int is_odd(unsigned x) { return x & 1; }
int marked(u32 mark) { return mark == 0xdeadbeef; }
long size_class(u32 len) {
  if (len < 100) return 0;
  if (len < 256) return 1;
  return 2 + is_odd(len);
}
""")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class CFunctions(harness.KqTestCase):

    def test_a_c_helper_filters_real_marked_packets(self):
        # send_udp.py: marked 0xdeadbeef with 200, 50 and 400 bytes of payload (28 bytes of
        # IPv4 and UDP headers more on the wire), unmarked 300, marked 7 with 500.
        script = harness.write_file(WORKDIR, "marked.kq", """
use c "helpers.c"
trace tracepoint:net:net_dev_xmit where marked(skb->mark) select skb->len as len, size_class(skb->len) as class
""")
        status, out, err = kq("-f", "json", script, "-c", f"{sys.executable} {SUPPORT}/send_udp.py")
        self.assertEqual(status, 0, err)
        rows = [json.loads(line) for line in out.splitlines() if line.startswith('{"time"')]
        self.assertEqual(sorted((r["len"], r["class"]) for r in rows), [(78, 0), (228, 1), (428, 2)], out)

    def test_a_c_file_with_an_error_shows_clangs_diagnostic(self):
        bad = harness.write_file(WORKDIR, "bad.c", "int f(int x) {\n  return x +;\n}\n")
        script = harness.write_file(WORKDIR, "bad.kq", 'use c "bad.c"\n')
        status, _, err = kq("check", script)
        self.assertEqual(status, 1, err)
        self.assertIn(f"{bad}:2:13: error: expected expression [CError]", err)
        self.assertIn("  return x +;", err)


if __name__ == "__main__":
    harness.main(sys.argv)
