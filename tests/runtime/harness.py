"""What every runtime test file shares: running kq, and checking that nothing it loaded
stays loaded. A test file sets `harness.KQ` from its command line and derives its test
cases from `KqTestCase`."""
import json
import os
import subprocess
import time
import unittest

KQ = None


def kq(*args, timeout=60):
    proc = subprocess.Popen([KQ, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        where = where_it_waits(proc.pid)
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"kq {' '.join(args)} did not end in {timeout} s\n{where}\n"
                             f"its standard error:\n{err.decode('utf-8', 'replace')}\n"
                             f"the end of its standard output:\n{out.decode('utf-8', 'replace')[-2000:]}")
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def where_it_waits(pid):
    """What a process that does not end is waiting for, for a test's failure message: each
    thread's state and kernel stack, its children, and its user stacks where gdb is there."""
    lines = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        base = f"/proc/{pid}/task/{tid}"
        try:
            stat = open(f"{base}/stat").read().rsplit(")", 1)[1].split()[0]
            comm = open(f"{base}/comm").read().strip()
            stack = open(f"{base}/stack").read().strip().replace("\n", "\n      ")
        except OSError as e:
            stat, comm, stack = "?", "?", str(e)
        lines.append(f"  thread {tid} ({comm}) state {stat}:\n      {stack}")
    children = subprocess.run(["ps", "-o", "pid,stat,wchan:30,args", "--ppid", str(pid)],
                              capture_output=True, text=True).stdout
    lines.append("  its children:\n" + children)
    try:
        gdb = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=60)
        lines.append(gdb.stdout[-8000:])
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "\n".join(lines)


def query_rows(out, query):
    """The event lines of text output `out` whose QUERY column (a script of several queries)
    is `query`: its name, or its number."""
    lines = out.splitlines()
    header = next((line for line in lines if line.startswith("TIME ") and " QUERY" in line), None)
    if header is None:
        return []
    at = header.index(" QUERY") + 1
    return [line for line in lines if line[:2].isdigit() and line[at:].split()[:1] == [str(query)]]


def loaded_kq_programs():
    """Names of kq's BPF programs loaded in the kernel right now. With
    KQ_TEST_SKIP_LEAK_CHECK=1 (several people testing on one machine at once, whose kq
    programs would be counted as leaks) the check is skipped: None."""
    if os.environ.get("KQ_TEST_SKIP_LEAK_CHECK") == "1":
        return None
    out = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, timeout=30)
    if out.returncode != 0:
        return None
    return [p.get("name", "") for p in json.loads(out.stdout or b"[]") if p.get("name", "").startswith("kq_")]


def kq_links():
    """How many of the kernel's BPF links attach kq's programs (None without the leak check:
    loaded_kq_programs)."""
    if loaded_kq_programs() is None:
        return None
    progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True).stdout or b"[]")
    ids = {p["id"] for p in progs if p.get("name", "").startswith("kq_")}
    links = json.loads(subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True).stdout or b"[]")
    return sum(1 for link in links if link.get("prog_id") in ids)


def write_file(directory, name, body):
    """Writes `body` to `directory/name` (a workload script); returns its path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(body)
    return path


def skip_reason():
    if os.geteuid() != 0:
        return "runtime tests load BPF programs and need root"
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "this kernel has no BTF (/sys/kernel/btf/vmlinux)"
    return None


class KqTestCase(unittest.TestCase):
    """Fails a test that leaves any of kq's programs loaded."""

    def setUp(self):
        self.before = loaded_kq_programs()
        if self.before:
            time.sleep(1)  # a previous kq's programs, still being freed

    def tearDown(self):
        # The kernel frees programs a moment after their last reference goes (RCU).
        if self.before is None:
            return
        deadline = time.monotonic() + 5
        after = loaded_kq_programs()
        while after and time.monotonic() < deadline:
            time.sleep(0.1)
            after = loaded_kq_programs()
        self.assertEqual(after, [], "kq left BPF programs loaded")


def main(argv):
    """Runs the tests of the calling file with `argv[1]` as kq."""
    global KQ
    KQ = argv[1]
    reason = skip_reason()
    if reason:
        print(f"SKIPPED: {reason}")
    unittest.main(argv=[argv[0], "-v", *argv[2:]])
