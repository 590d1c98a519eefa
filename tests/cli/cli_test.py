#!/usr/bin/env python3
"""Tests of the kq binary as a user runs it: exit statuses, which stream gets what, and
hostile input (huge, deeply nested, not UTF-8, NUL bytes, random bytes).

Usage: cli_test.py PATH_TO_KQ SOURCE_DIR
"""
import os
import re
import random
import signal
import subprocess
import sys
import tempfile
import time
import unittest

KQ = None
SOURCE_DIR = None
SEED = "trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef"


def kq(*args, input_bytes=None):
    proc = subprocess.run([KQ, *args], capture_output=True, timeout=60, input=input_bytes)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def write_temp(data: bytes, suffix=".kq"):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


class CommandLine(unittest.TestCase):
    def test_version(self):
        status, out, _ = kq("--version")
        self.assertEqual(status, 0)
        self.assertRegex(out, r"^kq \d+\.\d+\.\d+")

    def test_a_mistyped_command_gets_a_did_you_mean(self):
        status, _, err = kq("lsit", "tcp_*")
        self.assertEqual(status, 2)
        self.assertEqual(err, "kq: error: `lsit` is not a command of kq's; did you mean `kq list`?\n")

    def test_prefix_names_its_columns(self):
        status, _, err = kq("--prefix", "time,colour", "-e", "trace syscall:getppid")
        self.assertEqual(status, 2)
        self.assertIn("--prefix takes `none` or columns of time, cpu, pid, tid, comm, query and probe", err)

    def test_o_names_a_file_and_o_json_still_means_the_format(self):
        # `-o FILE` cannot be written: said before anything compiles. `-o json` is `-f json`.
        status, _, err = kq("-o", "/nonexistent/dir/out.txt", "-e", "trace syscall:getppid")
        self.assertEqual(status, 1)
        self.assertIn("kq: error: cannot write `/nonexistent/dir/out.txt`: No such file or directory", err)
        status, _, err = kq("-o", "json", "--dump", "plan", "-e", "trace syscall:getppid")
        self.assertEqual(status, 0, err)
        self.assertIn("kq: note: `-o json` is `-f json` now", err)

    def test_record_and_replay_say_what_is_wrong_before_anything_runs(self):
        # A recording that cannot be written is said before anything compiles or loads.
        status, _, err = kq("record", "-o", "/nonexistent/dir/r.kqr", "trace syscall:getppid")
        self.assertEqual(status, 1)
        self.assertIn("kq record: error: cannot write `/nonexistent/dir/r.kqr`: No such file or directory", err)
        status, _, err = kq("record", "trace syscall:getppid")
        self.assertEqual(status, 2)
        self.assertIn("--output is required", err)
        status, _, err = kq("record", "-o", "/tmp/kq-never-written.kqr", "--max-size", "1", "trace syscall:getppid")
        self.assertEqual(status, 2)
        self.assertIn("--max-size takes a size of 4k or more", err)
        self.assertFalse(os.path.exists("/tmp/kq-never-written.kqr"))
        status, _, err = kq("replay", "/nonexistent.kqr")
        self.assertEqual(status, 1)
        self.assertIn("kq replay: error: cannot read `/nonexistent.kqr`", err)
        text = write_temp(b"trace syscall:getppid\n")
        status, _, err = kq("replay", text)
        self.assertEqual(status, 1)
        self.assertIn("is not a recording of kq's", err)
        status, _, err = kq("replay")
        self.assertEqual(status, 2)

    def test_each_commands_help_says_what_it_takes(self):
        for args, wanted in [(["check", "--help"], ["--btf FILE", "kq check -e"]),
                             (["info", "--help"], ["kq info 'struct sk_buff'"]),
                             (["list", "--help"], ["kq list packet"]),
                             (["--help"], ["types, plan (programs, maps", "-o,--output FILE", "--prefix"])]:
            status, out, err = kq(*args)
            self.assertEqual(status, 0, err)
            for text in wanted:
                self.assertIn(text, out, args)

    def test_help_has_examples(self):
        status, out, _ = kq("--help")
        self.assertEqual(status, 0)
        self.assertIn("Examples:", out)
        self.assertIn("kq check", out)

    def test_build_ipft_writes_an_object(self):
        out_path = write_temp(b"", suffix=".o")
        status, out, err = kq("build", "--ipft", "-e",
                              "extension where l4proto == 6 select skb->len as len", "-o", out_path)
        self.assertEqual(status, 0, err)
        with open(out_path, "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF")
        os.unlink(out_path)

    def test_build_ipft_needs_one_extension(self):
        status, _, err = kq("build", "--ipft", "-e", "trace tracepoint:net:net_dev_xmit", "-o", "/dev/null")
        self.assertEqual(status, 1)
        self.assertIn("--ipft builds one `extension`; the input has 0 and 1 query", err)

    def test_build_needs_an_output_file(self):
        status, _, err = kq("build", "--ipft", "-e", "extension select mark")
        self.assertEqual(status, 2)
        self.assertIn("--output is required", err)

    def built_object(self):
        obj = write_temp(b"", suffix=".o")
        status, _, err = kq("build", "-e", "trace tracepoint:sched:sched_process_exec select comm",
                            "-o", obj)
        self.assertEqual(status, 0, err)
        self.addCleanup(os.unlink, obj)
        return obj

    def test_run_refuses_what_is_not_an_object(self):
        script = write_temp(b"trace tracepoint:sched:sched_process_exec\n")
        status, out, err = kq("run", script)
        self.assertEqual((status, out), (1, ""))
        self.assertIn(f"kq: error: cannot run `{script}`: it is not an ELF file", err)
        os.unlink(script)
        status, _, err = kq("run", "/nonexistent/x.o")
        self.assertEqual(status, 1)
        self.assertIn("cannot run `/nonexistent/x.o`: No such file or directory", err)

    def test_run_refuses_an_object_without_a_plan(self):
        ext = write_temp(b"", suffix=".o")
        status, _, err = kq("build", "--ipft", "-e", "extension select mark", "-o", ext)
        self.assertEqual(status, 0, err)
        status, _, err = kq("run", ext)
        os.unlink(ext)
        self.assertEqual(status, 1)
        self.assertIn("it has no section `.kq.plan` (it was not written by `kq build`)", err)
        self.assertIn("note: `kq build SCRIPT -o FILE` writes objects `kq run` runs", err)

    def test_run_refuses_another_plan_format(self):
        with open(self.built_object(), "rb") as f:
            data = f.read()
        self.assertEqual(data.count(b'"format": 6,'), 1)
        other = write_temp(data.replace(b'"format": 6,', b'"format": 9,'), suffix=".o")
        status, _, err = kq("run", other)
        os.unlink(other)
        self.assertEqual(status, 1)
        self.assertRegex(err, r"its plan is in format 9 \(written by kq \S+\); this kq reads "
                              r"format 6: build it again with this kq")

    def test_run_refuses_a_plan_out_of_bounds(self):
        with open(self.built_object(), "rb") as f:
            data = f.read()
        broken = write_temp(data.replace(b'"size": 56', b'"size": 16', 1), suffix=".o")
        status, _, err = kq("run", broken)
        os.unlink(broken)
        self.assertEqual(status, 1)
        # The message names the field and what is wrong with it.
        self.assertIn("probes[0].size is 16, less than a record's 40-byte header", err)

    def test_run_dumps_the_plan_without_root(self):
        status, out, err = kq("run", self.built_object(), "--dump", "plan")
        self.assertEqual(status, 0, err)
        self.assertIn("tracepoint", out)

    def test_run_takes_no_compile_time_options(self):
        obj = self.built_object()
        for args in (("-p", "1"), ("-c", "true"), ("--btf", "/sys/kernel/btf/vmlinux")):
            status, _, err = kq("run", obj, *args)
            self.assertEqual(status, 2, args)
            self.assertIn("`kq run` runs an object as it was built", err)
        status, _, err = kq("run", obj, "--buffer-size", "64")
        self.assertEqual(status, 2)
        self.assertIn("give --buffer-size to `kq build`", err)

    def test_build_reports_an_unwritable_output(self):
        status, _, err = kq("build", "--ipft", "-e", "extension select mark", "-o", "/nonexistent/ext.o")
        self.assertEqual(status, 1)
        self.assertIn("cannot write `/nonexistent/ext.o`", err)

    def test_no_arguments_is_a_usage_error(self):
        status, _, err = kq()
        self.assertEqual(status, 2)
        self.assertIn("Usage:", err)

    def test_check_reads_a_script_on_standard_input(self):
        self.assertEqual(kq("check", input_bytes=b"let big = 100\n" + SEED.encode() + b"\n"), (0, "", ""))
        status, _, err = kq("check", input_bytes=b"trace ip_send_skb(skb) where skb->lenn > 1\n")
        self.assertEqual(status, 1)
        self.assertIn("<stdin>:1:", err)
        self.assertIn("[NoSuchMember]", err)

    def test_blank_standard_input_is_a_usage_error(self):
        status, _, err = kq(input_bytes=b"  \n\n")
        self.assertEqual(status, 2)
        self.assertIn("Usage:", err)

    def test_unknown_option_is_a_usage_error(self):
        status, _, err = kq("--frobnicate")
        self.assertEqual(status, 2)
        self.assertIn("frobnicate", err)

    def test_ring_buffer_size_must_be_a_power_of_two(self):
        for size in ("3k", "5", "2G", "10s", "lots"):
            status, _, err = kq("--buffer-size", size, "--dump", "plan", "-e", "trace syscall:read")
            self.assertEqual(status, 2, size)
            self.assertIn(f"--buffer-size takes a power of two from 4k to 1G", err)
            self.assertIn(f"not `{size}`", err)

    def test_ring_buffer_size_takes_units_or_kib(self):
        for size, text in (("64", "65536 bytes"), ("8m", "8388608 bytes"), ("1MiB", "1048576 bytes")):
            status, out, err = kq("--buffer", size, "--dump", "plan", "-e", "trace syscall:read")
            self.assertEqual(status, 0, err)
            self.assertIn(text, out)

    def test_a_glob_at_exit_keeps_one_stash_for_the_query(self):
        # One stash for every function of the glob, allocated as calls come: not a
        # preallocated map per function (tests/vm measures the kernel memory it takes).
        status, out, err = kq("--dump", "plan", "-e", "trace tcp_v4_* select return")
        self.assertEqual(status, 0, err)
        stashes = re.findall(r"^  (stash_\w+) .*\(allocated on use\)$", out, re.M)
        self.assertEqual(stashes, ["stash_0"], out)

    def test_expression_and_argument_together(self):
        status, _, err = kq("check", "-e", SEED, SEED)
        self.assertEqual(status, 2)
        self.assertIn("not both", err)

    def test_check_seed_query(self):
        self.assertEqual(kq("check", "-e", SEED), (0, "", ""))
        self.assertEqual(kq("check", SEED), (0, "", ""))

    def test_check_script_file(self):
        path = write_temp(b"let big = 1000\ntrace tcp_sendmsg(sk, size) where size > big\n")
        try:
            self.assertEqual(kq("check", path), (0, "", ""))
        finally:
            os.unlink(path)

    @unittest.skipUnless(os.path.exists("/sys/kernel/btf/vmlinux"), "needs this kernel's BTF")
    def test_ctrl_c_while_compiling_ends_kq_then_and_a_slow_compile_says_so(self):
        # `tcp_*`'s 1,622 programs take seconds to compile (4.4 s of ignored Ctrl-C once).
        query = "trace tcp_* select func, return"
        proc = subprocess.Popen([KQ, "--dump", "bpf", query], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.2)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1].decode()
        self.assertLess(time.monotonic() - sent, 0.5, err)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("kq: stopped while compiling: nothing was loaded", err)
        # On a terminal, a wait of more than a second is said.
        shown = subprocess.run(["script", "-qec", f"{KQ} --dump bpf '{query}' >/dev/null", "/dev/null"],
                               capture_output=True, timeout=120).stdout.decode()
        self.assertIn("kq: compiling the query's programs (Ctrl-C stops)", shown)

    def test_examples_check(self):
        examples = os.path.join(SOURCE_DIR, "examples")
        names = sorted(n for n in os.listdir(examples) if n.endswith(".kq"))
        self.assertTrue(names)
        for name in names:
            with self.subTest(example=name):
                status, out, err = kq("check", os.path.join(examples, name))
                self.assertEqual((status, err), (0, ""))

    @unittest.skipUnless(os.path.exists("/sys/kernel/btf/vmlinux"), "needs this kernel's BTF as a file")
    def test_examples_check_against_a_btf_file(self):
        # Another kernel's BTF, without its tracefs: a system call's arguments are named from
        # kq's table, a classic tracepoint's fields from BTF's trace_event_raw_* (at d824265
        # opensnoop.kq failed: `UnknownName filename`).
        examples = os.path.join(SOURCE_DIR, "examples")
        for name in sorted(n for n in os.listdir(examples) if n.endswith(".kq")):
            with self.subTest(example=name):
                status, out, err = kq("check", "--btf", "/sys/kernel/btf/vmlinux", os.path.join(examples, name))
                self.assertEqual(status, 0, err)
        status, out, err = kq("check", "--btf", "/sys/kernel/btf/vmlinux", "--dump", "types",
                              "trace tracepoint:block:block_rq_issue group by str(rwbs) select hist(bytes)")
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"bytes : (unsigned int|u32)")

    def test_missing_file(self):
        status, _, err = kq("check", "/nonexistent/query.kq")
        self.assertEqual(status, 1)
        self.assertIn("cannot read `/nonexistent/query.kq`: No such file or directory", err)

    def test_dump_ast_goes_to_stdout(self):
        status, out, err = kq("--dump", "ast", "-e", SEED)
        self.assertEqual((status, err), (0, ""))
        self.assertTrue(out.startswith("script\n  query\n"))
        self.assertIn("member ->len", out)

    def test_syntax_error_is_a_diagnostic_on_stderr(self):
        status, out, err = kq("check", "-e", "trace ip_send_skb(skb) where skb->len >")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(
            err,
            "<input>:1:40: error: expected an expression after `>` [ExpectedExpression]\n"
            "trace ip_send_skb(skb) where skb->len >\n"
            "                                       ^\n")

    def test_antlr_wording_never_shows(self):
        for query in ["trace", "trace x where", "trace x(", "trace x where a b c", "let",
                      "fn f(", "trace x select a,", "trace x where (struct", "}{", "trace x group"]:
            with self.subTest(query=query):
                status, _, err = kq("check", "-e", query)
                self.assertEqual(status, 1)
                for antlr_words in ["mismatched input", "expecting", "extraneous input",
                                    "no viable alternative", "token recognition error", "<EOF>"]:
                    self.assertNotIn(antlr_words, err)
                self.assertRegex(err, r"<input>:\d+:\d+: error: .* \[\w+\]")

    def test_color(self):
        _, _, plain = kq("check", "-e", "trace")
        self.assertNotIn("\033[", plain)
        _, _, colored = kq("--color", "always", "check", "-e", "trace")
        self.assertIn("\033[1;31merror: ", colored)

    def test_info_on_this_kernel(self):
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            self.skipTest("this kernel has no BTF")
        status, out, err = kq("info", "ip_send_skb")
        self.assertEqual((status, err), (0, ""))
        self.assertTrue(out.startswith("int ip_send_skb(struct net *net, struct sk_buff *skb);\n"))
        self.assertIn("fentry/fexit", out)

    def test_list_on_this_kernel(self):
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            self.skipTest("this kernel has no BTF")
        status, out, _ = kq("list", "tcp_v4_*")
        self.assertEqual(status, 0)
        self.assertIn("tcp_v4_connect\n", out)
        status, out, _ = kq("list", "tracepoint:net:*")
        self.assertEqual(status, 0)
        self.assertIn("tracepoint:net:net_dev_xmit\n", out)
        status, out, _ = kq("list", "packet")
        self.assertEqual(status, 0)
        self.assertIn("ip_send_skb (skb: arg1)\n", out)
        self.assertIn("tracepoint:net:net_dev_queue (skb: arg0)\n", out)  # the fallback

    def test_check_btf_file_that_is_not_btf(self):
        status, _, err = kq("check", "--btf", "/etc/hostname", "-e", SEED)
        self.assertEqual(status, 1)
        self.assertIn("cannot read BTF from `/etc/hostname`", err)

    def test_check_against_a_copy_of_vmlinux_btf(self):
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            self.skipTest("this kernel has no BTF")
        with open("/sys/kernel/btf/vmlinux", "rb") as f:
            path = write_temp(f.read(), suffix=".btf")
        try:
            status, _, err = kq("check", "--btf", path, "-e", SEED)
            self.assertEqual((status, err), (0, ""))
            status, _, err = kq("check", "--btf", path, "-e", "trace ip_send_skb(skb) where skb->lenn > 1")
            self.assertEqual(status, 1)
            self.assertIn("[NoSuchMember]", err)
        finally:
            os.unlink(path)

    def test_a_builtin_names_the_task_member_this_btf_lacks(self):
        # `ppid` reads task_struct.real_parent->tgid, `netns` task_struct.nsproxy->net_ns->
        # ns.inum. A copy of vmlinux BTF with one member renamed lacks it: at d824265 the
        # builtin compiled to a constant 0 and `kq check` said nothing.
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            self.skipTest("this kernel has no BTF")
        with open("/sys/kernel/btf/vmlinux", "rb") as f:
            vmlinux = f.read()
        for member, builtin, spelled in (
                (b"real_parent", "ppid", "task_struct.real_parent"),
                (b"nsproxy", "netns", "task_struct.nsproxy"),
                (b"net_ns", "netns", "task_struct.nsproxy->net_ns"),
                (b"inum", "netns", "task_struct.nsproxy->net_ns->ns.inum")):
            with self.subTest(member=member):
                renamed = vmlinux.replace(b"\0" + member + b"\0", b"\0" + member[:-1] + b"Z\0")
                self.assertNotEqual(renamed, vmlinux)
                path = write_temp(renamed, suffix=".btf")
                try:
                    query = f"trace tracepoint:sched:sched_switch where {builtin} != 0"
                    status, _, err = kq("check", "--btf", path, "-e", query)
                    self.assertEqual(status, 1, err)
                    self.assertIn(f"<input>:1:43: error: `{builtin}` reads `{spelled}` of the current "
                                  "task, and this kernel's BTF has no member", err)
                    self.assertIn("[NotAvailableHere]", err)
                finally:
                    os.unlink(path)
        status, _, err = kq("check", "-e", "trace tracepoint:sched:sched_switch where ppid != 0 and netns != 0")
        self.assertEqual((status, err), (0, ""))

    def test_malformed_btf_is_an_error_not_a_crash(self):
        # libbpf accepts both: a FUNC whose type is an INT, and one whose type is id 999.
        for name, why in (("func_to_int.btf", "not a function prototype"),
                          ("func_to_999.btf", "refers to type 999")):
            path = os.path.join(SOURCE_DIR, "tests", "btf", "testdata", name)
            for args in (("check", "--btf", path, "-e", "trace foo"), ("info", "foo", "--btf", path),
                         ("list", "*", "--btf", path)):
                status, _, err = kq(*args)
                self.assertEqual(status, 1, args)
                self.assertIn(why, err)


class Repl(unittest.TestCase):
    def test_declarations_checks_and_errors(self):
        lines = "\n".join(["help", "let big = 100", "fn twice(x) = x * 2", "decls",
                           "check trace ip_send_skb(skb) where skb->len > twice(big)",
                           "check trace ip_send_skb(skb) where skb->lenn > big",
                           "let = 3", "decls", "quit", "trace never_reached"]) + "\n"
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            self.skipTest("this kernel has no BTF")
        status, out, err = kq("--repl", input_bytes=lines.encode())
        self.assertIn("Type a query to run it", out)
        # Declarations are kept (the one with an error is not), in order.
        self.assertEqual(out.count("let big = 100\nfn twice(x) = x * 2\n"), 2)
        self.assertIn("`struct sk_buff` has no member `lenn` [NoSuchMember]", err)
        self.assertIn("note: did you mean `len`?", err)
        self.assertIn("[ExpectedName]", err)
        self.assertNotIn("never_reached", err)

    def test_survives_what_once_ended_it(self):
        # Arguments past the registers at exit (an internal error once), a query whose
        # temporaries overflow the BPF stack and scratch (LLVM's exit once): each gets a
        # diagnostic, and the session goes on to the next line.
        if not os.path.exists("/sys/kernel/btf/vmlinux"):
            self.skipTest("this kernel has no BTF")
        many = " or ".join(["comm == comm"] * 300)
        lines = "\n".join(["trace ip_append_data(flags, return)",
                            f"trace tracepoint:net:net_dev_xmit where {many}",
                            "decls", "help"]) + "\n"
        status, out, err = kq("--repl", "--dump", "bpf", input_bytes=lines.encode())
        self.assertNotIn("internal error", err)
        self.assertNotIn("LLVM ERROR", err)
        self.assertIn("[ResourceLimit]", err)
        self.assertIn("check QUERY", out)  # `help` ran after both


class HostileInput(unittest.TestCase):
    def check_file(self, data: bytes, kind: str):
        path = write_temp(data)
        try:
            status, _, err = kq("check", path)
        finally:
            os.unlink(path)
        self.assertEqual(status, 1, err[:2000])
        self.assertIn(f"[{kind}]", err)
        return err

    def test_empty_command_duration_and_pid_zero_are_usage_errors(self):
        for args, message in [(["-c", ""], "-c needs a value"), (["-d", ""], "-d needs a value"),
                              (["-p", "0"], "-p needs a process id; 0 is not one"),
                              (["-p", str(os.getpid()), "-c", "true"], "give one of them"),
                              (["-d", "2.x5s"], "takes a duration like `10s`")]:
            status, out, err = kq("trace syscall:openat", *args)
            self.assertEqual(status, 2, err)
            self.assertIn(message, err)

    def test_empty_input(self):
        status, _, err = kq("check", "-e", "")
        self.assertEqual(status, 1)
        self.assertIn("[EmptyInput]", err)
        # A script's empty variable as the query: said so, not the help.
        status, _, err = kq("")
        self.assertEqual(status, 1, err)
        self.assertIn("[EmptyInput]", err)
        self.check_file(b"", "EmptyInput")

    def test_only_comments(self):
        self.check_file(b"# nothing\n   # at all\n", "EmptyInput")

    def test_one_mebibyte_query(self):
        self.check_file(b"trace x where comm == \"" + b"a" * (1 << 20) + b"\"\n", "InputTooLarge")

    def test_script_that_never_ends(self):
        # A script symlinked to /dev/zero is read only to the limit (under 1 GiB of memory,
        # reading it whole fails).
        import resource
        link = os.path.join(tempfile.mkdtemp(), "zero.kq")
        os.symlink("/dev/zero", link)
        # (Not under AddressSanitizer, which reserves terabytes of address space.)
        sanitized = "ASAN_OPTIONS" in os.environ
        limit = None if sanitized else lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        try:
            proc = subprocess.run([KQ, "check", link], capture_output=True, timeout=60,
                                  preexec_fn=limit)
        finally:
            os.unlink(link)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(b"[InputTooLarge]", proc.stderr)

    def test_large_query_within_the_limit(self):
        long_string = "a" * (100 * 1024)
        self.assertEqual(kq("--dump", "ast", "-e", f'trace x where comm == "{long_string}"')[0], 0)

    def test_deep_nesting(self):
        for text in ["(" * 10000 + "1" + ")" * 10000, "(" * 10000, "-" * 10000 + "1",
                     "not " * 10000 + "1", "1" + " or 1" * 20000, "a" + "->b" * 20000,
                     "1" + " ? 1 : 1" * 10000, "f(" * 10000]:
            with self.subTest(text=text[:20]):
                status, _, err = kq("check", "-e", "trace x where " + text)
                self.assertEqual(status, 1, err[:500])
                self.assertRegex(err, r"\[(NestingTooDeep|ExpectedExpression|ExpectedToken)\]")

    def test_invalid_utf8(self):
        err = self.check_file(b"trace x where comm == \"\xff\xfe\"\n", "InvalidUtf8")
        self.assertIn(":1:24:", err)
        # The line is shown with the bad bytes escaped, never echoed to the terminal: an
        # overlong form (0xc0 0xaf) once was.
        for data, shown in [(b"\xff\xfe", "\\xff\\xfe"), (b"\xc0\xaf", "\\xc0\\xaf")]:
            path = write_temp(b"trace x where comm == \"" + data + b"\"\n")
            try:
                proc = subprocess.run([KQ, "check", path], capture_output=True, timeout=30)
            finally:
                os.unlink(path)
            err = proc.stderr.decode("utf-8")  # strictly: no byte that is not UTF-8
            self.assertIn(f'trace x where comm == "{shown}"\n', err)

    def test_nul_bytes(self):
        self.check_file(b"trace x\0 where a == 1\n", "UnexpectedCharacter")
        self.check_file(b"\0\0\0", "UnexpectedCharacter")

    def test_unterminated_string(self):
        status, _, err = kq("check", "-e", 'trace x where comm == "abc')
        self.assertEqual(status, 1)
        self.assertIn("[UnterminatedString]", err)

    def test_number_too_large(self):
        status, _, err = kq("check", "-e", "trace x where a == 99999999999999999999999")
        self.assertEqual(status, 1)
        self.assertIn("[IntegerTooLarge]", err)

    def test_random_bytes_never_crash(self):
        rng = random.Random(1234)
        alphabet = b"trace where select()[]->.*&!~-+<>=|^?:,;\"'\\ \n\t#0123456789abxsz_@$\xc3\xa9\xff"
        for i in range(300):
            data = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
            path = write_temp(data)
            try:
                status, _, err = kq("check", path)
            finally:
                os.unlink(path)
            # 0 for the rare valid script, 1 for errors; never a signal or another status.
            self.assertIn(status, (0, 1), f"input {data!r} gave status {status}: {err[:500]}")
            if status == 1:
                self.assertIn("error:", err)


def without_tracefs(command):
    """Runs `command` (a shell line) in a private mount namespace with tracefs unmounted, so
    the machine's own mount is never touched; then says whether tracefs came back."""
    script = ("umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; "
              "umount /sys/kernel/debug 2>/dev/null; "
              f"{command}; echo status=$?; test -e /sys/kernel/tracing/events && echo mounted")
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, timeout=60)
    return proc.stdout.decode(), proc.stderr.decode()


def loaded_objects(*args, cache=None):
    """The shared objects the dynamic linker loaded for `kq ARGS` (LD_DEBUG=files), and kq's
    exit status and standard error; `cache`: kq's cache directory (a new one by default)."""
    cache = cache or tempfile.mkdtemp(prefix="kq-cache-")
    proc = subprocess.run([KQ, *args], capture_output=True, timeout=60,
                          env={**os.environ, "LD_DEBUG": "files", "XDG_CACHE_HOME": cache})
    err = proc.stderr.decode("utf-8", "replace")
    objects = [line.split("file=", 1)[1].split()[0] for line in err.splitlines() if "file=" in line]
    return objects, proc.returncode, err


class CPlugin(unittest.TestCase):
    """C goes through libkq-c.so (Clang's libraries), loaded only by a query that uses C."""
    C_FREE = "trace tracepoint:syscalls:sys_enter_kill select sig"
    WITH_C = 'let sigs = macros("asm/signal.h", "SIG") trace tracepoint:syscalls:sys_enter_kill select sigs[sig]'

    def test_a_query_without_c_never_loads_the_plugin(self):
        objects, status, err = loaded_objects("check", "-e", self.C_FREE)
        self.assertEqual(status, 0, err)
        self.assertTrue(objects, "LD_DEBUG listed no objects: the test would prove nothing")
        self.assertFalse([o for o in objects if "kq-c" in o or "clang" in o or "LLVM" in o], objects)

    def test_a_query_with_c_loads_it(self):
        objects, status, err = loaded_objects("check", "-e", self.WITH_C)
        self.assertEqual(status, 0, err)
        self.assertTrue([o for o in objects if o.endswith("/libkq-c.so")], objects)
        self.assertTrue([o for o in objects if "libclang-cpp" in o], objects)

    def test_macros_read_before_are_answered_from_the_cache_without_clang(self):
        cache = tempfile.mkdtemp(prefix="kq-cache-")
        first, status, err = loaded_objects("--dump", "types", "-e", self.WITH_C, cache=cache)
        self.assertEqual(status, 0, err)
        self.assertTrue([o for o in first if o.endswith("/libkq-c.so")], first)
        self.assertTrue(os.listdir(os.path.join(cache, "kq")))
        again, status, err_again = loaded_objects("--dump", "types", "-e", self.WITH_C, cache=cache)
        self.assertEqual(status, 0, err_again)
        self.assertFalse([o for o in again if "kq-c" in o or "clang" in o], again)
        types = lambda text: [l for l in text.splitlines() if "macros of" in l]
        self.assertTrue(types(kq_env({"XDG_CACHE_HOME": cache}, "--dump", "types", "-e", self.WITH_C)[1]))
        self.assertEqual(types(kq_env({"XDG_CACHE_HOME": cache}, "--dump", "types", "-e", self.WITH_C)[1]),
                         types(kq_env({"XDG_CACHE_HOME": tempfile.mkdtemp()}, "--dump", "types", "-e",
                                      self.WITH_C)[1]))

    def test_a_missing_plugin_is_a_diagnostic(self):
        status, _, err = kq_env({"KQ_C_PLUGIN": "/nonexistent/libkq-c.so",
                                 "XDG_CACHE_HOME": tempfile.mkdtemp()}, "check", "-e", self.WITH_C)
        self.assertEqual(status, 1, err)
        self.assertIn("error: `macros` needs kq's C support [CUnavailable]", err)
        self.assertIn("kq's C plugin is not installed (looked for /nonexistent/libkq-c.so)", err)

    def test_a_plugin_that_is_not_one_is_a_diagnostic(self):
        status, _, err = kq_env({"KQ_C_PLUGIN": "/lib/x86_64-linux-gnu/libz.so.1",
                                 "XDG_CACHE_HOME": tempfile.mkdtemp()}, "check", "-e", self.WITH_C)
        self.assertEqual(status, 1, err)
        self.assertIn("[CUnavailable]", err)
        self.assertIn("is not the C plugin of this kq", err)


class CHostileFiles(unittest.TestCase):
    """C named by a script is read only from regular files: not /dev/zero, not a directory."""

    def test_devices_and_directories_are_not_read(self):
        for text, where in [('use c "/dev/zero"', "use c"), ('use "/dev/zero"', "use"),
                            ('let x = macros("/dev/zero", "X") trace tracepoint:syscalls:sys_enter_kill select x[sig]', "macros"),
                            ('use "/tmp"', "use")]:
            status, _, err = kq("check", "-e", text)
            self.assertEqual(status, 1, (where, err))
            self.assertIn("is not a regular file [HeaderNotFound]", err, where)
        status, _, err = kq("build", "--ipft", "/dev/zero.c", "-o", "/dev/null")
        self.assertNotEqual(status, 0, err)


def kq_env(env, *args):
    proc = subprocess.run([KQ, *args], capture_output=True, timeout=60, env={**os.environ, **env})
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


@unittest.skipIf(os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"),
                 "mount namespaces need root, and the running kernel's BTF")
class Tracefs(unittest.TestCase):
    QUERY = "trace syscall:openat select filename"

    def test_check_does_not_mount_tracefs(self):
        out, err = without_tracefs(f"{KQ} check -e '{self.QUERY}'")
        self.assertNotIn("mounted", out, err)
        # Without tracefs a system call's arguments are named from kq's table.
        self.assertIn("status=0", out, err)
        # A classic tracepoint's fields come from BTF's trace_event_raw_*; its category is
        # not checked, and kq says why.
        out, err = without_tracefs(f"{KQ} check -e 'trace tracepoint:block:block_rq_issue select hist(bytes)'")
        self.assertIn("status=0", out, err)
        self.assertIn("tracefs is not mounted", err)

    def test_running_a_query_mounts_tracefs(self):
        out, err = without_tracefs(f"{KQ} --dump bpf -e '{self.QUERY}' >/dev/null")
        self.assertIn("status=0", out, err)
        self.assertIn("mounted", out, err)


if __name__ == "__main__":
    KQ, SOURCE_DIR = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v"])
