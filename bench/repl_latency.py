#!/usr/bin/env python3
"""How long a one-liner takes from Return to attached (its header printed) in the
interactive session, against the same query run as `kq QUERY` from the shell (exec to
header), measured in the same run. The session keeps the kernel's BTF, the attach features
it found and LLVM set up; each query is forked from it. Then what a pasted line of 16,000
characters costs the session in CPU until its echo is drawn (it grew with the square of
the line's length before kq read the line editor's wide line). Then background jobs on
one place: the first (a query never seen: it compiles, and attaches the place's site), a
second that asks the same of another value (it takes a slot of the site, attaches nothing,
and loads the first one's object with its own value: a live site's `where` literals are
read from .rodata), a third that asks something new there (it compiles, and takes a slot),
and how long `stop N` takes for a slot's job and for the last one (which detaches the site).

    bench/repl_latency.py [build/kq] [RUNS]      (as root)
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
from terminal import Session  # noqa: E402

KQ = sys.argv[1] if len(sys.argv) > 1 else "build/kq"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
QUERY = 'trace tracepoint:sched:sched_process_exec where comm == "kqnobody" select comm'


def from_shell():
    start = time.monotonic()
    proc = subprocess.Popen([KQ, QUERY], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    took = time.monotonic() - start
    proc.send_signal(2)
    proc.communicate()
    return took


def in_session(s):
    mark = s.mark()
    start = time.monotonic()
    os.write(s.fd, (QUERY + "\r").encode())
    while not any(line.startswith("TIME") for line in s.screen.lines()[mark + 1:]):
        s.pump(0.001)
    took = time.monotonic() - start
    s.ctrl_c()
    s.wait_prompt()
    return took


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def paste(s, length):
    """The session's CPU seconds from the first byte of a pasted line to its drawn echo."""
    text = ('trace syscall:read where comm == "x" ' * (length // 36 + 1))[:length - 7] + "kqend77"
    before = cpu_seconds(s.pid)
    for i in range(0, length, 1024):
        os.write(s.fd, text[i:i + 1024].encode())
        s.pump(0.001)
    while "kqend77" not in s.screen.text():
        s.pump(0.05)
    s.pump(0.5)
    took = cpu_seconds(s.pid) - before
    s.ctrl_c()
    s.wait_prompt()
    return took


def start_job(s, number, query):
    """Milliseconds from Return to the job's `[N] query` line."""
    mark = s.mark()
    start = time.monotonic()
    os.write(s.fd, (query + " &\r").encode())
    while not any(line.startswith(f"[{number}] trace") for line in s.screen.lines()[mark:]):
        s.pump(0.001)
    took = (time.monotonic() - start) * 1000
    s.wait_prompt()
    return took


def stop_job(s, number):
    """Milliseconds from `stop N` to the job's `[N] stopped` line."""
    mark = s.mark()
    start = time.monotonic()
    os.write(s.fd, f"stop {number}\r".encode())
    while not any(line.startswith(f"[{number}] stopped") for line in s.screen.lines()[mark:]):
        s.pump(0.001)
    took = (time.monotonic() - start) * 1000
    s.wait_prompt()
    return took


def shared_place(s, runs, label, query, number=0):
    """`query` % (a value its `where` compares, a constant it selects): three jobs on one
    place, then each stopped. `number`: the jobs the session has numbered so far; returns
    it after these."""
    first, second, new, stop_slot, stop_last = [], [], [], [], []
    nonce = os.getpid()  # never seen before: each round's first and third jobs compile
    for i in range(runs):
        first.append(start_job(s, number + 1, query % (f"{nonce}{i}1", f"{nonce}{i}1")))
        second.append(start_job(s, number + 2, query % (f"{nonce}{i}2", f"{nonce}{i}1")))
        new.append(start_job(s, number + 3, query % (f"{nonce}{i}3", f"{nonce}{i}3")))
        s.pump(0.2)  # every session past its start
        stop_slot.append(stop_job(s, number + 3))
        stop_job(s, number + 2)
        s.pump(0.2)
        stop_last.append(stop_job(s, number + 1))
        number += 3
    m = statistics.median
    print(f"background jobs on {label} (median of {runs}): the first (compiled) starts in "
          f"{m(first):.1f} ms; a second asking the same of another value {m(second):.1f} ms "
          f"({m(second) / m(first):.2f}x); a third asking something new there (compiled) "
          f"{m(new):.1f} ms ({m(new) / m(first):.2f}x); a slot's job stops in "
          f"{m(stop_slot):.1f} ms, the last (detaching) in {m(stop_last):.1f} ms")
    return number


def main():
    state = tempfile.mkdtemp(prefix="kqbench")
    s = Session(KQ, env={"XDG_STATE_HOME": state})
    s.wait_prompt()
    shell, session = [], []
    for _ in range(RUNS):  # interleaved, so that both see the same load
        shell.append(from_shell())
        session.append(in_session(s))
    paste_cpu = paste(s, 16000)
    jobs = shared_place(s, RUNS, "one tracepoint",
                        'trace tracepoint:sched:sched_process_exec where comm == "kq%s" select comm, %s')
    shared_place(s, RUNS, "one uprobe",
                 'trace uprobe:/lib/x86_64-linux-gnu/libc.so.6:getpid where comm == "kq%s" select pid, %s', jobs)
    s.enter("quit")
    s.wait_exit()
    s.close()
    sh, se = statistics.median(shell) * 1000, statistics.median(session) * 1000
    print(f"one-liner to attached (median of {RUNS}): from the shell {sh:.1f} ms, "
          f"in the session {se:.1f} ms, ratio {sh / se:.1f}x")
    print(f"a pasted line of 16,000 characters: {paste_cpu:.2f} s of the session's CPU")


if __name__ == "__main__":
    main()
