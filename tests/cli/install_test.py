#!/usr/bin/env python3
"""kq installed as a user installs it: `cmake --install BUILD --prefix X` into a fresh X,
then X/bin/kq runs from there (its C plugin found from the binary, not the build tree or
the configured prefix), `man` reads its page, the page lists every option `kq --help`
does, and bash completes its commands, options and their values from the installed file.

Usage: install_test.py BUILD_DIR SOURCE_DIR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILD = None
SOURCE = None


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prefix = tempfile.mkdtemp(prefix="kq-install-")
        done = subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix], capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(done.stdout + done.stderr)
        cls.kq = os.path.join(cls.prefix, "bin", "kq")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.prefix, ignore_errors=True)

    def run_kq(self, *args):
        env = dict(os.environ)
        env.pop("KQ_C_PLUGIN", None)
        env["XDG_CACHE_HOME"] = tempfile.mkdtemp(dir=self.prefix)  # no answer kept from before
        return subprocess.run([self.kq, *args], capture_output=True, text=True, env=env, timeout=120)

    def test_the_installed_kq_finds_its_c_plugin_from_where_it_is(self):
        plugins = [os.path.join(d, f) for d, _, files in os.walk(self.prefix) for f in files if f == "libkq-c.so"]
        self.assertEqual(len(plugins), 1, plugins)
        self.assertTrue(plugins[0].startswith(os.path.join(self.prefix, "lib")), plugins)
        # `macros()` reads a header through the plugin: it loads, or the check fails.
        done = self.run_kq("check", "-e", 'let sigs = macros("asm/signal.h", "SIG")\n'
                                          'trace syscall:kill select sigs[sig] as signal')
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_version_names_the_commit_llvm_and_libbpf(self):
        done = self.run_kq("--version")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"^kq \d+\.\d+\.\d+ \(commit (?:[0-9a-f]{7,}(?:-dirty)?|unknown)\)\n"
                                      r"LLVM 16\.\d+\.\d+, libbpf v\d+\.\d+\n$")

    def test_man_reads_the_page_and_it_lists_every_option(self):
        page = os.path.join(self.prefix, "share", "man", "man1", "kq.1")
        self.assertTrue(os.path.exists(page))
        if not shutil.which("man"):
            self.skipTest("man is not installed (scripts/install-deps installs man-db)")
        shown = subprocess.run(["man", "-l", page], capture_output=True, text=True,
                               env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("trace the Linux kernel", shown.stdout)
        helped = self.run_kq("--help").stdout
        options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", helped.split("Subcommands:")[0]))
        self.assertGreater(len(options), 10, helped)
        for option in sorted(options):
            self.assertIn(option, shown.stdout.replace("\u2010", "-"), f"{option} is not in kq(1)")

    def complete(self, line):
        """What bash offers for `line` (the last word being completed), as a user's shell
        does with the installed completion file."""
        completion = os.path.join(self.prefix, "share", "bash-completion", "completions", "kq")
        words = line.split(" ")
        script = (f"source {completion}\n"
                  f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
                  "COMP_LINE=" + repr(line) + "; COMP_POINT=${#COMP_LINE}\n"
                  "_kq_complete kq; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
        env = dict(os.environ, PATH=os.path.dirname(self.kq) + ":" + os.environ["PATH"])
        done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        return sorted(w for w in done.stdout.split("\n") if w)

    def test_bash_completes_commands_options_and_values(self):
        self.assertIn("serve", self.complete("kq se"))
        self.assertEqual(self.complete("kq --form"), ["--format"])
        self.assertEqual(self.complete("kq -f j"), ["json"])
        self.assertEqual(self.complete("kq --dump p"), ["plan"])
        self.assertEqual(self.complete("kq --prefix time,c"), ["time,comm", "time,cpu"])
        # Kernel names through `kq list`, from BTF (no root needed).
        self.assertIn("tcp_sendmsg", self.complete("kq info tcp_sendm"))
        self.assertIn("tcp_v4_connect", self.complete("kq list tcp_v4_con"))


if __name__ == "__main__":
    BUILD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
