#!/usr/bin/env python3
"""`kq build --ipft` objects used as ipftrace2 uses them, without ipftrace2: a backend of
our own (backend.bpf.c, built with clang -target bpf) is linked with kq's ext.o by libbpf's
static linker, loaded, attached to net_dev_xmit, and the `data` module() fills for marked
UDP packets is decoded through the extension's BTF description as ipftrace2 decodes it
(ipft_backend.cpp). send_udp.py sends 0xdeadbeef-marked datagrams of 200, 50 and 400
bytes (228, 78 and 428 bytes of IPv4 at net_dev_xmit on lo), and two not so marked.
With KQ_IPFT_BACKEND=kprobe or fentry, the backend calls module() through
that attach method from ip_output instead (the VM tier: this kernel has neither), with its ctx.
Usage: ipft_test.py PATH_TO_KQ PATH_TO_IPFT_BACKEND"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
import harness  # noqa: E402
from harness import kq  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEND_UDP = os.path.join(HERE, "..", "support", "send_udp.py")
WORKDIR = tempfile.mkdtemp(prefix="kq-ipft-")
RUNNER = None


def compile_backend():
    """The backend object, or None when clang cannot build BPF here."""
    if shutil.which("clang") is None:
        return None
    out = os.path.join(WORKDIR, "backend.o")
    arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    include = [f"-I/usr/include/{arch}"] if arch else []
    kind = os.environ.get("KQ_IPFT_BACKEND", "tp_btf")
    define = {"kprobe": ["-DBACKEND_KPROBE"], "fentry": ["-DBACKEND_FENTRY"]}.get(kind, [])
    target_arch = {"x86_64": "x86", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    define.append(f"-D__TARGET_ARCH_{target_arch}")  # pt_regs' layout, for BPF_KPROBE
    proc = subprocess.run(["clang", "-target", "bpf", "-O2", "-g", *include, *define, "-c",
                           os.path.join(HERE, "backend.bpf.c"), "-o", out],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return out


def skip_reason():
    return harness.skip_reason() or (None if shutil.which("clang") else "no clang to build the backend")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class IpftExtension(harness.KqTestCase):
    backend = None

    @classmethod
    def setUpClass(cls):
        cls.backend = compile_backend()

    def run_extension(self, name, *build_args):
        ext = os.path.join(WORKDIR, name + ".o")
        status, out, err = kq("build", "--ipft", *build_args, "-o", ext)
        self.assertEqual(status, 0, err)
        proc = subprocess.run([RUNNER, self.backend, ext, os.path.join(WORKDIR, name + "-linked.o"),
                               "python3", SEND_UDP], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def test_selected_values_print_as_ipftrace2_prints_them(self):
        out = self.run_extension(
            "values", "-e",
            "extension where l4proto == 17 select skb->len as len, hex(mark) as mark, "
            "(enum sock_type)(l4proto / 8) as type, l4proto as proto, skb->len > 100 as big")
        lines = out.splitlines()
        self.assertEqual(lines[-1], "marked: 3 dropped: 0", out)
        self.assertEqual(lines[:-1], [
            f"backend_len: {n} ( len: {n} mark: 0xdeadbeef type: SOCK_DGRAM proto: 17 big: {b} )"
            for n, b in [(228, "true"), (78, "false"), (428, "true")]], out)

    def test_a_byte_prints_with_its_signedness(self):
        # 228 bytes of IPv4: a `__u8` (`unsigned char`, as `iph->tos` is) of 228 once printed
        # as -28, every byte declared `char`; a `char` of it is -28.
        out = self.run_extension(
            "bytes", "-e", "use net\nextension where l4proto == 17 select (unsigned char)skb->len as u8len, "
            "(char)skb->len as s8len, iphdr(skb)->protocol as proto")
        lines = out.splitlines()
        self.assertEqual(lines[0], "backend_len: 228 ( u8len: 228 s8len: -28 proto: 17 )", out)

    def test_the_docs_example_filters_by_the_l4_protocol(self):
        # language.md section 6's example, for UDP as send_udp.py sends: it once compared
        # `proto` (the ethertype, 0x0800) with IPPROTO_TCP, which no packet matches.
        with open(os.path.join(HERE, "..", "..", "docs", "language.md")) as f:
            example = next(l.strip() for l in f if l.startswith("extension where "))
        self.assertIn("IPPROTO_TCP", example)
        out = self.run_extension("doc", "-e", example.replace("IPPROTO_TCP", "IPPROTO_UDP"))
        lines = out.splitlines()
        self.assertEqual(lines[-1], "marked: 3 dropped: 0", out)
        self.assertEqual(lines[:-1], [f"backend_len: {n} ( len: {n} mark: 0xdeadbeef )"
                                      for n in (228, 78, 428)], out)

    def test_where_that_fails_drops_the_event(self):
        out = self.run_extension("tcp", "-e", "extension where l4proto == 6 select skb->len as len")
        self.assertEqual(out.splitlines(), ["marked: 3 dropped: 3"], out)

    def test_extension_from_a_file(self):
        path = os.path.join(WORKDIR, "ext.kq")
        with open(path, "w") as f:
            f.write("# the IPv4 header's lengths, for UDP\nuse net\n"
                    "extension where l4proto == IPPROTO_UDP\n"
                    "  select skb->len as len, ntohs(iphdr(skb)->tot_len) as tot_len\n")
        out = self.run_extension("file", path)
        self.assertEqual(out.splitlines()[:3], [f"backend_len: {n} ( len: {n} tot_len: {n} )"
                                                for n in (228, 78, 428)], out)

    def test_an_ipftrace2_c_extension_unchanged(self):
        # Written as ipftrace2's own example (example/extensions/bpf/gso) is, including the
        # header `ipft --gen bpf-module-header` prints: kq provides it.
        path = os.path.join(WORKDIR, "ext.c")
        with open(path, "w") as f:
            f.write(C_EXTENSION)
        out = self.run_extension("c", path)
        lines = out.splitlines()
        self.assertEqual(lines[-1], "marked: 3 dropped: 0", out)
        self.assertEqual(lines[:-1], [f"backend_len: {n} ( len: {n} mark: 0xdeadbeef )"
                                      for n in (228, 78, 428)], out)

    def test_a_c_extension_with_an_error_shows_clangs_diagnostic(self):
        path = os.path.join(WORKDIR, "bad_ext.c")
        with open(path, "w") as f:
            f.write(C_EXTENSION.replace("ev->len = BPF_CORE_READ(skb, len);", "ev->len = skb->lenn;"))
        status, _, err = kq("build", "--ipft", path, "-o", os.path.join(WORKDIR, "bad.o"))
        self.assertEqual(status, 1, err)
        self.assertIn(f"{path}:17:18: error: no member named 'lenn' in 'struct sk_buff'; did you mean 'len'? [CError]", err)
        self.assertIn("9:16: note: 'len' declared here", err)
        self.assertFalse(os.path.exists(os.path.join(WORKDIR, "bad.o")))


C_EXTENSION = """#include "ipft.h"

struct event {
  unsigned int len;
  __u32 mark __ipft_fmt_hex;
} __ipft_event_struct;

struct sk_buff {
  unsigned int len;
  __u32 mark;
};

__hidden int
module(void *ctx, struct sk_buff *skb, __u8 data[64])
{
  struct event *ev = (struct event *)data;
  ev->len = BPF_CORE_READ(skb, len);
  ev->mark = BPF_CORE_READ(skb, mark);
  return 0;
}
"""


if __name__ == "__main__":
    RUNNER = sys.argv.pop(2)
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
