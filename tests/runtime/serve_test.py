#!/usr/bin/env python3
"""`kq serve` against a real Prometheus (Debian's `prometheus`, started here on loopback,
scraping every second) and `promtool check metrics`: counters and histograms of workloads
whose answer is known, scripts added, changed, broken and removed while scrapes go on, and
SIGTERM detaching everything.

Usage: serve_test.py PATH_TO_KQ"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WORKDIR = tempfile.mkdtemp(prefix="kq-serve-")
LOAD = os.path.join(WORKDIR, "kqsrvload")
# N getppid calls, then M sleeps of 20 ms, from a process named kqsrvload.
LOAD_C = r"""
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  long calls = atol(argv[1]), sleeps = atol(argv[2]);
  for (long i = 0; i < calls; i++) syscall(SYS_getppid);
  struct timespec t = {0, 20 * 1000 * 1000};
  for (long i = 0; i < sleeps; i++) clock_nanosleep(CLOCK_MONOTONIC, 0, &t, 0);
  return 0;
}
"""

CALLS = 'trace syscall:getppid where comm == "kqsrvload" select count() as calls\n'
SLEEPS = ('trace syscall:clock_nanosleep where comm == "kqsrvload" '
          'select hist(duration) as sleep, count() as sleeps\n')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, headers=None, timeout=5):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.headers.get("Content-Type", ""), response.read().decode()


# Under scripts/sanitize kq runs several times slower: every wait is this many times longer.
SCALE = float(os.environ.get("KQ_TEST_TIMEOUT_SCALE", "1"))


def wait_ready(url, proc=None, log=lambda: ""):
    """Waits for kq serve at `url` (http://HOST:PORT) to answer /readyz with 200."""
    deadline = time.monotonic() + 60 * SCALE
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"kq serve exited {proc.returncode}: {log()}")
        try:
            if get(f"{url}/readyz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"kq serve at {url} never became ready: {log()}")


def skip_reason():
    reason = harness.skip_reason()
    if reason:
        return reason
    for tool in ["prometheus", "promtool", "gcc"]:
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/install-deps installs it)"
    return None


class Served:
    """A `kq serve` of `directory`, and a Prometheus scraping it every second."""

    def __init__(self, directory):
        self.port = free_port()
        self.err_path = os.path.join(WORKDIR, f"serve-{self.port}.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen([harness.KQ, "serve", "--listen", f"127.0.0.1:{self.port}", directory],
                                     stdout=subprocess.DEVNULL, stderr=self.err)
        self.wait_ready()
        self.prom_port = free_port()
        self.prom_dir = tempfile.mkdtemp(prefix="prom-", dir=WORKDIR)
        config = os.path.join(self.prom_dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "scrape_configs:\n  - job_name: kq\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{self.port}']\n")
        self.prom = subprocess.Popen(["prometheus", f"--config.file={config}",
                                      f"--storage.tsdb.path={self.prom_dir}/data",
                                      f"--web.listen-address=127.0.0.1:{self.prom_port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_ready(self):
        wait_ready(self.url(""), self.proc, self.log)

    def query(self, promql):
        """The instant query's samples, as {labels-json: value}."""
        q = urllib.parse.urlencode({"query": promql})
        _, _, body = get(f"http://127.0.0.1:{self.prom_port}/api/v1/query?{q}")
        result = json.loads(body)["data"]["result"]
        return {json.dumps({k: v for k, v in r["metric"].items() if k not in ("job", "instance")},
                           sort_keys=True): float(r["value"][1]) for r in result}

    def wait_for(self, promql, predicate, timeout=30):
        deadline = time.monotonic() + timeout * SCALE
        got = None
        while time.monotonic() < deadline:
            try:
                got = self.query(promql)
                if predicate(got):
                    return got
            except OSError:
                pass  # Prometheus still starting
            time.sleep(0.5)
        raise AssertionError(f"{promql}: {got}; kq serve said: {self.log()}")

    def stop(self):
        self.prom.terminate()
        self.prom.wait(timeout=30)
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        took = time.monotonic() - started
        self.err.close()
        return self.proc.returncode, took


def one(samples):
    return list(samples.values())[0] if len(samples) == 1 else None


class Serve(harness.KqTestCase):
    @classmethod
    def setUpClass(cls):
        reason = skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        src = os.path.join(WORKDIR, "load.c")
        with open(src, "w") as f:
            f.write(LOAD_C)
        subprocess.run(["gcc", "-O1", "-o", LOAD, src], check=True)

    def scripts(self, **texts):
        directory = tempfile.mkdtemp(prefix="scripts-", dir=WORKDIR)
        for name, text in texts.items():
            harness.write_file(directory, f"{name}.kq", text)
        return directory

    def test_a_connection_that_sends_nothing_holds_up_no_scrape(self):
        # Idle connections (a port scanner, a stuck client) wait beside the scrape: it is
        # answered while they are still open, not after the server gives up on them.
        directory = self.scripts(calls="trace syscall:getppid select count() as calls\n")
        port = free_port()
        with open(os.path.join(WORKDIR, f"idle-{port}.err"), "w") as err:
            proc = subprocess.Popen([harness.KQ, "serve", "--listen", f"127.0.0.1:{port}", directory],
                                    stdout=subprocess.DEVNULL, stderr=err)
            try:
                wait_ready(f"http://127.0.0.1:{port}", proc)
                idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
                idle[0].send(b"GET /metr")  # half a request
                status, _, body = get(f"http://127.0.0.1:{port}/metrics", timeout=60 * SCALE)
                self.assertEqual(status, 200)
                self.assertIn("kq_calls_calls_total ", body)
                for s in idle:
                    s.setblocking(False)
                    with self.assertRaises(BlockingIOError, msg="the server closed an idle connection first"):
                        s.recv(1)
                    s.close()
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        # A port past 65535 is refused, not taken modulo 65536.
        status, out, err = harness.kq("serve", "--listen", "127.0.0.1:99999", directory)
        self.assertEqual(status, 1, err)
        self.assertIn("a port is a number from 0 to 65535", err)

    def test_counters_and_histograms_equal_the_workload(self):
        # 1234 getppid calls and 7 sleeps of 20 ms: through a real scrape, the counter is
        # 1234 (an instant query, not increase(), which extrapolates) and the histogram's
        # _count and its buckets from 20 ms up are 7, the buckets below 0.
        served = Served(self.scripts(calls=CALLS, sleeps=SLEEPS))
        try:
            subprocess.run([LOAD, "1234", "7"], check=True)
            got = served.wait_for("kq_calls_calls_total", lambda s: one(s) == 1234)
            self.assertEqual(one(got), 1234)
            served.wait_for("kq_sleeps_sleep_seconds_count", lambda s: one(s) == 7)
            served.wait_for("kq_sleeps_sleeps_total", lambda s: one(s) == 7)
            buckets = served.query("kq_sleeps_sleep_seconds_bucket")
            for labels, count in buckets.items():
                le = json.loads(labels)["le"]
                bound = float("inf") if le == "+Inf" else float(le)
                # 20 ms and a little more (the scheduler's wake-up): [2^24, 2^25) ns.
                self.assertEqual(count, 7 if bound >= 0.025 else 0, buckets)
            # The histogram's _sum: the seven sleeps' time, 20 ms each and a little more.
            total = one(served.query("kq_sleeps_sleep_seconds_sum"))
            self.assertTrue(7 * 0.020 <= total < 7 * 0.100, total)
            # What promtool makes of kq's exposition, in both formats.
            _, ctype, text = get(served.url("/metrics"))
            self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
            check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
            self.assertEqual(check.returncode, 0, check.stdout.decode() + check.stderr.decode() + text)
            self.assertEqual(check.stdout + check.stderr, b"", text)
            _, ctype, text = get(served.url("/metrics"), {"Accept": "application/openmetrics-text;version=1.0.0"})
            self.assertTrue(ctype.startswith("application/openmetrics-text"), ctype)
            self.assertTrue(text.endswith("# EOF\n"), text)
            self.assertIn("# UNIT kq_sleeps_sleep_seconds seconds\n", text)
            up = served.query("kq_script_up")
            self.assertEqual(sorted(up.values()), [1.0, 1.0], up)
        finally:
            status, took = served.stop()
        self.assertEqual(status, 0, f"status {status}: {served.log()}")
        self.assertLess(took, 2.0 * SCALE, "SIGTERM should detach everything within a second or so")

    def test_built_objects_and_series_limits(self):
        # Objects `kq build` wrote are served as scripts are (their queries' text as HELP,
        # durations in seconds, from the plan); an object kq did not build is reported, not
        # served. A script's `config max_groups = 3` holds three series: of five processes'
        # ten calls each, the last two's twenty are counted as lost to a full table.
        directory = self.scripts(limited='config max_groups = 3\n'
                                         'trace syscall:getppid where comm == "kqsrvload" group by pid '
                                         'select count() as calls\n')
        for name, text in [("built", CALLS), ("bsleeps", SLEEPS)]:
            status, _, err = harness.kq("build", "-e", text, "-o", os.path.join(directory, f"{name}.o"))
            self.assertEqual(status, 0, err)
        subprocess.run(["gcc", "-c", "-x", "c", "-", "-o", os.path.join(directory, "junk.o")],
                       input=b"int x;\n", check=True)
        served = Served(directory)
        try:
            for _ in range(5):
                subprocess.run([LOAD, "10", "0"], check=True)
            subprocess.run([LOAD, "0", "3"], check=True)
            served.wait_for("kq_built_calls_total", lambda s: one(s) == 50)
            served.wait_for("kq_bsleeps_sleep_seconds_count", lambda s: one(s) == 3)
            served.wait_for('kq_query_lost_events_total{script="limited",cause="table_full"}', lambda s: one(s) == 20)
            calls = served.query("kq_limited_calls_total")
            self.assertEqual(sorted(calls.values()), [10.0, 10.0, 10.0], calls)
            self.assertEqual(one(served.query('kq_query_series{script="limited"}')), 3)
            self.assertEqual(one(served.query('kq_query_series_limit{script="limited"}')), 3)
            self.assertEqual(one(served.query('kq_query_series_limit{script="built"}')), 1)
            self.assertEqual(one(served.query('kq_script_up{script="junk"}')), 0)
            errors = served.query('kq_script_error{script="junk"}')
            self.assertIn("kq serve serves objects", list(errors)[0], errors)
            _, _, text = get(served.url("/metrics"))
            self.assertIn('# HELP kq_built_calls_total trace syscall:getppid where comm == "kqsrvload" '
                          'select count() as calls\n', text)
            check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
            self.assertEqual(check.returncode, 0, check.stdout.decode() + check.stderr.decode() + text)
        finally:
            status, _ = served.stop()
        self.assertEqual(status, 0, served.log())

    def test_scripts_come_and_go_while_scrapes_go_on(self):
        # A script added, one changed and one broken while Prometheus scrapes: the other's
        # counter keeps counting (never reset), the new series appear, the broken one is
        # kq_script_up 0 with its error, and a removed one's series go.
        directory = self.scripts(calls=CALLS)
        served = Served(directory)
        try:
            subprocess.run([LOAD, "100", "0"], check=True)
            served.wait_for("kq_calls_calls_total", lambda s: one(s) == 100)
            harness.write_file(directory, "sleeps.kq", SLEEPS)
            harness.write_file(directory, "broken.kq", "trace syscall:getppid select count(nosuch) as n\n")
            served.wait_for('kq_script_up{script="sleeps"}', lambda s: one(s) == 1)
            served.wait_for('kq_script_up{script="broken"}', lambda s: one(s) == 0)
            errors = served.query("kq_script_error")
            self.assertIn("broken.kq:1:", list(errors)[0], errors)
            subprocess.run([LOAD, "50", "2"], check=True)
            served.wait_for("kq_calls_calls_total", lambda s: one(s) == 150)
            served.wait_for("kq_sleeps_sleeps_total", lambda s: one(s) == 2)
            # Its text changed: its own counter starts again; calls' does not.
            harness.write_file(directory, "sleeps.kq", SLEEPS.replace("as sleeps", "as naps"))
            served.wait_for("kq_sleeps_naps_total", lambda s: one(s) == 0)
            subprocess.run([LOAD, "1", "1"], check=True)
            served.wait_for("kq_sleeps_naps_total", lambda s: one(s) == 1)
            served.wait_for("kq_calls_calls_total", lambda s: one(s) == 151)
            # No scrape of calls found it lower than before, from the first to the last.
            history = served.query("resets(kq_calls_calls_total[5m])")
            self.assertEqual(one(history), 0, history)
            os.unlink(os.path.join(directory, "broken.kq"))
            served.wait_for('kq_script_up{script="broken"}', lambda s: len(s) == 0)
        finally:
            status, _ = served.stop()
        self.assertEqual(status, 0, served.log())

    def test_scripts_on_one_place_share_its_attachment(self):
        # Two scripts on one system call attach it once (the second takes a slot of the
        # first's site); each counts every call; removing the first (the site's maker)
        # leaves the other's counter counting; removing both detaches it.
        directory = self.scripts(calls=CALLS, again=CALLS.replace("as calls", "as again"))
        served = Served(directory)
        try:
            served.wait_for('kq_script_up', lambda s: len(s) == 2 and all(v == 1 for v in s.values()))
            self.assertEqual(harness.kq_links(), 1)
            subprocess.run([LOAD, "40", "0"], check=True)
            served.wait_for("kq_calls_calls_total", lambda s: one(s) == 40)
            served.wait_for("kq_again_again_total", lambda s: one(s) == 40)
            os.unlink(os.path.join(directory, "calls.kq"))
            served.wait_for('kq_script_up{script="calls"}', lambda s: len(s) == 0)
            self.assertEqual(harness.kq_links(), 1)
            subprocess.run([LOAD, "2", "0"], check=True)
            served.wait_for("kq_again_again_total", lambda s: one(s) == 42)
            os.unlink(os.path.join(directory, "again.kq"))
            served.wait_for('kq_script_up{script="again"}', lambda s: len(s) == 0)
            deadline = time.monotonic() + 5 * SCALE
            while harness.kq_links() and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(harness.kq_links(), 0)
        finally:
            status, _ = served.stop()
        self.assertEqual(status, 0, served.log())

    def test_events_are_json_lines_in_a_rotated_file(self):
        # Twice ten events of a query that selects them: the first ten are rotated to
        # FILE.1 when the next would pass the size, the second ten begin FILE; each line
        # says its script, host, query and time, and its typed columns.
        directory = self.scripts(ppids='trace syscall:getppid where comm == "kqsrvload" select pid, tid\n')
        events = os.path.join(WORKDIR, "events.json")
        # Ten lines and a half, as long as this machine's lines are (its name is in each).
        line = json.dumps({"script": "ppids", "host": socket.gethostname(), "time": "2026-12-02T14:34:56.268207301Z",
                           "time_ns": 1796222096268207301, "cpu": 0, "pid": 1234567, "tid": 1234567,
                           "comm": "kqsrvload", "probe": "syscall:getppid", "query": 1}, separators=(",", ":"))
        max_bytes = str(int(10.5 * (len(line) + 1)))
        port = free_port()
        err_path = os.path.join(WORKDIR, "events.err")
        with open(err_path, "w") as err:
            proc = subprocess.Popen([harness.KQ, "serve", "--listen", f"127.0.0.1:{port}", "--events", events,
                                     "--events-max-bytes", max_bytes, directory],
                                    stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_ready(f"http://127.0.0.1:{port}", proc)
            pids = []
            for _ in range(2):
                load = subprocess.Popen([LOAD, "10", "0"])
                load.wait()
                pids.append(load.pid)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    _, _, text = get(f"http://127.0.0.1:{port}/metrics")
                    if f'kq_query_events_total{{script="ppids",query="1"}} {10 * len(pids)}' in text:
                        break
                    time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        with open(err_path) as f:
            log = f.read()
        self.assertEqual(proc.returncode, 0, log)
        for path, pid in [(events + ".1", pids[0]), (events, pids[1])]:
            with open(path) as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual(len(lines), 10, (path, lines, log))
            for e in lines:
                self.assertEqual((e["script"], e["host"], e["query"], e["pid"], e["tid"]),
                                 ("ppids", socket.gethostname(), 1, pid, pid), e)
                self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
                self.assertEqual(int(e["time"][17:19]), time.gmtime(e["time_ns"] // 10**9).tm_sec, e)

    def test_a_fleet_of_three_scraped_by_one_prometheus(self):
        # Three kq serve, each in a network namespace of its own (reached over a veth pair)
        # and counting its own namespace's workload (`netns ==`: one kernel serves all
        # three); one Prometheus scrapes them all, and `sum by (instance)` is each one's.
        fleet = []
        try:
            for n in (1, 2, 3):
                ns = f"kqfleet{n}"
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
                subprocess.run(["ip", "link", "del", f"kqf{n}h"], capture_output=True)
                for command in [["ip", "netns", "add", ns],
                                ["ip", "link", "add", f"kqf{n}h", "type", "veth", "peer", "name", f"kqf{n}n"],
                                ["ip", "link", "set", f"kqf{n}n", "netns", ns],
                                ["ip", "addr", "add", f"10.201.{n}.1/24", "dev", f"kqf{n}h"],
                                ["ip", "link", "set", f"kqf{n}h", "up"],
                                ["ip", "netns", "exec", ns, "ip", "addr", "add", f"10.201.{n}.2/24", "dev", f"kqf{n}n"],
                                ["ip", "netns", "exec", ns, "ip", "link", "set", f"kqf{n}n", "up"],
                                ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]]:
                    subprocess.run(command, check=True, capture_output=True)
                inode = subprocess.run(["ip", "netns", "exec", ns, "stat", "-L", "-c", "%i", "/proc/self/ns/net"],
                                       check=True, capture_output=True, text=True).stdout.strip()
                directory = self.scripts(fleet=f'trace syscall:getppid where comm == "kqsrvload" and netns == {inode} '
                                               "select count() as calls\n")
                err = open(os.path.join(WORKDIR, f"fleet{n}.err"), "w")
                proc = subprocess.Popen(["ip", "netns", "exec", ns, harness.KQ, "serve", "--listen",
                                         f"10.201.{n}.2:9435", directory], stdout=subprocess.DEVNULL, stderr=err)
                fleet.append((ns, proc, err))
            for n, (_, proc, _) in zip((1, 2, 3), fleet):
                wait_ready(f"http://10.201.{n}.2:9435", proc)
            prom_port = free_port()
            prom_dir = tempfile.mkdtemp(prefix="prom-", dir=WORKDIR)
            config = os.path.join(prom_dir, "prometheus.yml")
            targets = ", ".join(f"'10.201.{n}.2:9435'" for n in (1, 2, 3))
            with open(config, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                        f"scrape_configs:\n  - job_name: kq\n    static_configs:\n      - targets: [{targets}]\n")
            prom = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={prom_dir}/data",
                                     f"--web.listen-address=127.0.0.1:{prom_port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for n in (1, 2, 3):
                    subprocess.run(["ip", "netns", "exec", f"kqfleet{n}", LOAD, str(100 * n), "0"], check=True)
                q = urllib.parse.urlencode({"query": "sum by (instance) (kq_fleet_calls_total)"})
                want = {f"10.201.{n}.2:9435": 100.0 * n for n in (1, 2, 3)}
                got = None
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and got != want:
                    try:
                        _, _, body = get(f"http://127.0.0.1:{prom_port}/api/v1/query?{q}")
                        got = {r["metric"]["instance"]: float(r["value"][1]) for r in json.loads(body)["data"]["result"]}
                    except OSError:
                        pass
                    time.sleep(0.5)
                self.assertEqual(got, want)
            finally:
                prom.terminate()
                prom.wait(timeout=30)
        finally:
            for ns, proc, err in fleet:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
                err.close()
            for n in (1, 2, 3):
                subprocess.run(["ip", "netns", "del", f"kqfleet{n}"], capture_output=True)
                subprocess.run(["ip", "link", "del", f"kqf{n}h"], capture_output=True)
        for ns, proc, _ in fleet:
            self.assertEqual(proc.returncode, 0, ns)

    def test_remote_write_into_a_prometheus_that_receives(self):
        # Pushed every second to a second Prometheus (its remote-write receiver), which starts
        # only after kq serve began pushing: the first pushes fail and wait in the queue, then
        # go; the series carry the instance kq serve was told, and equal the workload.
        directory = self.scripts(calls=CALLS)
        receiver_port = free_port()
        port = free_port()
        err_path = os.path.join(WORKDIR, "remote.err")
        with open(err_path, "w") as err:
            proc = subprocess.Popen([harness.KQ, "serve", "--listen", f"127.0.0.1:{port}", "--remote-write",
                                     f"http://127.0.0.1:{receiver_port}/api/v1/write", "--remote-write-interval", "1s",
                                     "--instance", "node-a", directory], stdout=subprocess.DEVNULL, stderr=err)
        prom = None
        try:
            wait_ready(f"http://127.0.0.1:{port}", proc)
            subprocess.run([LOAD, "321", "0"], check=True)
            time.sleep(2.5)  # pushes fail: nothing listens yet
            prom_dir = tempfile.mkdtemp(prefix="prom-", dir=WORKDIR)
            config = os.path.join(prom_dir, "prometheus.yml")
            with open(config, "w") as f:
                f.write("global:\n  scrape_interval: 1h\n")
            prom = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={prom_dir}/data",
                                     f"--web.listen-address=127.0.0.1:{receiver_port}",
                                     "--web.enable-remote-write-receiver"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            q = urllib.parse.urlencode({"query": 'kq_calls_calls_total{instance="node-a",job="kq"}'})
            got = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and got != [321.0]:
                try:
                    _, _, body = get(f"http://127.0.0.1:{receiver_port}/api/v1/query?{q}")
                    got = [float(r["value"][1]) for r in json.loads(body)["data"]["result"]]
                except OSError:
                    pass
                time.sleep(0.5)
            self.assertEqual(got, [321.0])
            _, _, text = get(f"http://127.0.0.1:{port}/metrics")
            failures = [line for line in text.splitlines() if line.startswith("kq_remote_write_failures_total ")]
            self.assertTrue(failures and float(failures[0].split()[1]) >= 1, text)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            if prom:
                prom.terminate()
                prom.wait(timeout=30)
        with open(err_path) as f:
            log = f.read()
        self.assertEqual(proc.returncode, 0, log)
        self.assertIn("remote write to", log)

    def test_check_names_what_prometheus_would_refuse(self):
        directory = self.scripts(files='trace syscall:openat group by str(filename) select count()\n')
        status, out, err = harness.kq("serve", "--check", directory)
        self.assertEqual(status, 1, err)
        self.assertIn("files.kq:1:31: error: `str(filename)` is not a name Prometheus accepts for a label", err)
        self.assertIn("select str(filename) as str_filename", err)
        # The README's examples serve.
        examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "serve")
        status, out, err = harness.kq("serve", "--check", examples)
        self.assertEqual((status, err), (0, ""))


if __name__ == "__main__":
    try:
        harness.main(sys.argv)
    finally:
        shutil.rmtree(WORKDIR, ignore_errors=True)
