"""`kq record` of a flood against `perf record` of the same tracepoint: what recording costs
the recorder (events kept per CPU-second of its own) and what it keeps (bytes per event,
the file's size). The flood: a process named kqflood calling getppid N times."""
import os
import re
import signal
import subprocess
import tempfile
import time

import benchlib

TRACEPOINT = "syscalls:sys_enter_getppid"


def flood(calls):
    return ["python3", "-c",
            "import ctypes, os\n"
            "ctypes.CDLL(None).prctl(15, b'kqflood', 0, 0, 0)\n"
            f"for _ in range({calls}): os.getppid()\n"]


def recorded(tool, err):
    """Events the recorder says it kept, and lost."""
    if tool == "kq":
        m = re.search(r"kq: (\d+) events?, (\d+) lost", err)
        return (int(m.group(1)), int(m.group(2))) if m else (None, None)
    m = re.search(r"\((\d+) samples\)", err)
    lost = re.search(r"(\d+) lost", err)
    return (int(m.group(1)) if m else None, int(lost.group(1)) if lost else 0)


def record_once(tool, cmd, path, calls):
    with tempfile.TemporaryFile() as err:
        recorder = benchlib.Measured(cmd, stderr=err)
        if tool == "kq":
            ready = benchlib.wait_for_programs(recorder)
        else:
            time.sleep(1.5)  # perf opens its events as it starts: nothing to wait for by name
            ready = recorder.running()
        if not ready:
            recorder.finish(signal.SIGINT)
            return None
        benchlib.run_measured(flood(calls))
        time.sleep(0.3)
        run = recorder.finish(signal.SIGINT)
        err.seek(0)
        text = err.read().decode(errors="replace")
    events, lost = recorded(tool, text)
    size = os.path.getsize(path) if os.path.exists(path) else None
    if run is None or not events or not size:
        return None
    return events, lost, run.cpu, size


def record_rows(table, kq, runs, calls=1000000):
    table.section(f"record: {calls // 1000}k getppid events, `kq record -q` against `perf record -e {TRACEPOINT}` (ref)")
    perf = subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode == 0
    with tempfile.TemporaryDirectory(prefix="kq-bench-record-") as d:
        commands = {"kq": lambda p: [kq, "record", "-q", "--buffer-size", "64M", "-o", p,
                                     "trace tracepoint:syscalls:sys_enter_getppid where comm == \"kqflood\""]}
        if perf:
            commands["perf"] = lambda p: ["perf", "record", "-e", TRACEPOINT, "-a", "-m", "16M", "-o", p]
        rate, per_event, size, lost = ({t: [] for t in commands} for _ in range(4))
        for i in range(runs):
            for tool, make in commands.items():
                path = os.path.join(d, f"{tool}-{i}")
                result = record_once(tool, make(path), path, calls)
                if not result:
                    continue
                events, lost_n, cpu, bytes_ = result
                rate[tool].append(events / cpu if cpu else None)
                per_event[tool].append(bytes_ / events)
                size[tool].append(bytes_ / 1024)
                lost[tool].append(lost_n)
        med = {name: {t: benchlib.median(v) for t, v in d.items()} for name, d in
               (("rate", rate), ("per_event", per_event), ("size", size), ("lost", lost))}
        table.add("events kept per CPU-second of the recorder", "ev/CPU-s", med["rate"].get("kq"),
                  [("perf", med["rate"].get("perf"))])
        table.add("bytes per event in the file", "B", med["per_event"].get("kq"), [("perf", med["per_event"].get("perf"))])
        table.add("the file", "MiB", med["size"].get("kq"), [("perf", med["size"].get("perf"))])
        if any(med["lost"].get(t) for t in commands):
            table.notes.append("record: lost events (median) " +
                               ", ".join(f"{t} {med['lost'].get(t)}" for t in commands))
        if not perf:
            table.notes.append("record: perf is not installed (linux-perf): its row is skipped")
