#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ringio-top against a running http_server with --metrics-port: --once and --json
under load and after it, the live view driven through tmux, bad arguments and an
unreachable page.

    ringio_top_test.py RINGIO_TOP HTTP_SERVER [unittest arguments, e.g. -k Once]

Exits 77 (skipped, for ctest) when every test it ran was skipped."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

TOP = HTTP_SERVER = None
DEADLINE = 30  # seconds for anything to happen on a busy machine


def wait_for(predicate, what, timeout=DEADLINE):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Server:
    """http_server on 127.0.0.1 with its metrics page, stopped by PID."""

    def __init__(self, threads=2):
        self.proc = subprocess.Popen([HTTP_SERVER, "--port", "0", "--threads", str(threads), "--metrics-port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [self.proc.stdout.readline(), self.proc.stdout.readline()]
        self.port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", lines[0]).group(1))
        self.metrics_port = int(re.search(r"metrics on 127\.0\.0\.1:(\d+)", lines[1]).group(1))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


class Load:
    """Keep-alive GETs from a few threads until stopped; counts the responses."""

    def __init__(self, port, threads=4):
        self.port, self.done, self.count, self.lock = port, threading.Event(), 0, threading.Lock()
        self.errors = []
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def _run(self):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE)
            while not self.done.is_set():
                conn.request("GET", "/")
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    raise AssertionError(f"status {r.status}")
                with self.lock:
                    self.count += 1
            conn.close()
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.errors.append(repr(e))

    def responses(self):
        with self.lock:
            return self.count

    def stop(self):
        self.done.set()
        for t in self.threads:
            t.join(DEADLINE)
        if self.errors:
            raise AssertionError(f"load failed: {self.errors}")


def top(*args, timeout=DEADLINE):
    return subprocess.run([TOP, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def top_json(port, interval_ms=500):
    r = top("--once", "--json", "--interval", interval_ms, port)
    if r.returncode != 0:
        raise AssertionError(f"ringio-top exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


class OnceTest(unittest.TestCase):
    def setUp(self):
        self.server = Server(threads=2)

    def tearDown(self):
        self.server.stop()

    def test_json_under_load_and_after(self):
        load = Load(self.server.port)
        try:
            wait_for(lambda: load.responses() > 100, "the load to start")
            before = load.responses()
            snap = top_json(self.server.metrics_port)
            made = load.responses() - before
        finally:
            load.stop()
        self.assertEqual(snap["target"], f"http://127.0.0.1:{self.server.metrics_port}/metrics")
        self.assertEqual([row["loop"] for row in snap["loops"]], [0, 1])
        http_part, total = snap["http"], snap["total"]
        self.assertGreater(http_part["requests_per_second"], 0)
        # The server cannot have answered more in the interval than the clients got
        # while ringio-top ran (plus one request in flight per client).
        self.assertLessEqual(http_part["requests_per_second"] * snap["interval_seconds"], made + 4)
        self.assertGreaterEqual(http_part["connections_active"], 1)
        self.assertEqual(http_part["errors_5xx_per_second"], 0)
        self.assertGreater(total["operations_per_second"], 0)
        self.assertGreater(total["bytes_received_per_second"], 0)
        self.assertGreater(total["bytes_sent_per_second"], 0)
        for key in ("operations_per_second", "in_flight", "cancellations_per_second", "stalls", "tasks",
                    "bytes_received_per_second", "bytes_sent_per_second"):
            self.assertAlmostEqual(total[key], sum(row[key] for row in snap["loops"]), delta=1e-6 * (1 + total[key]))
        self.assertGreater(total["tasks"], 0)
        # The process is local: its CPU comes from /proc, and it worked.
        self.assertIn("/proc, pid", snap["cpu_source"])
        self.assertGreater(snap["cpu_percent"], 0)
        # After the load: no requests, and the clients' connections are gone.
        after = wait_for(lambda: (lambda s: s if s["http"]["connections_active"] == 0 else None)(
            top_json(self.server.metrics_port, 200)), "the connections to close")
        self.assertEqual(after["http"]["requests_per_second"], 0)
        quiet = top_json(self.server.metrics_port, 500)
        self.assertEqual(quiet["http"]["requests_per_second"], 0)
        # What is left is the loop serving the page to ringio-top itself.
        self.assertLess(quiet["total"]["operations_per_second"], total["operations_per_second"])

    def test_text_under_load(self):
        load = Load(self.server.port)
        try:
            wait_for(lambda: load.responses() > 100, "the load to start")
            r = top("--once", "--interval", 300, "--sort", "loop", f"127.0.0.1:{self.server.metrics_port}")
        finally:
            load.stop()
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertNotIn("\x1b", r.stdout)  # plain text for scripts
        self.assertTrue(lines[0].startswith(f"ringio-top  http://127.0.0.1:{self.server.metrics_port}/metrics"))
        self.assertIn("CPU ", lines[1])
        requests = re.match(r"HTTP (\S+) req/s", lines[2])
        self.assertIsNotNone(requests, lines[2])
        self.assertNotEqual(requests.group(1), "0")
        heading = next(i for i, line in enumerate(lines) if "INFLIGHT" in line)
        self.assertEqual(lines[heading].split(), ["vLOOP", "OPS/S", "INFLIGHT", "CANCEL/S", "FAIL/S", "STALLS",
                                                  "SLOWEST", "RUN%", "TASKS"])
        rows = [line.split() for line in lines[heading + 1:heading + 4]]
        self.assertEqual([row[0] for row in rows], ["0", "1", "total"])
        self.assertNotEqual(rows[2][1], "0")


class InteractiveTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which("tmux"):
            self.skipTest("tmux is not installed (scripts/install-deps.sh test installs it)")
        self.server = Server(threads=2)
        self.tmux = ["tmux", "-L", f"ringio-top-test-{os.getpid()}", "-f", "/dev/null"]

    def tearDown(self):
        subprocess.run(self.tmux + ["kill-server"], capture_output=True)
        self.server.stop()

    def screen(self):
        r = subprocess.run(self.tmux + ["capture-pane", "-p", "-t", "top"], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else ""

    def heading(self):
        return next((line for line in self.screen().splitlines() if line.lstrip("v^").startswith("LOOP")
                     or line.startswith("LOOP")), "")

    def rows(self):
        lines = self.screen().splitlines()
        start = next((i for i, line in enumerate(lines) if "INFLIGHT" in line), None)
        if start is None:
            return []
        return [line.split()[0] for line in lines[start + 1:] if line.split() and
                (line.split()[0].isdigit() or line.split()[0] == "total")]

    def keys(self, *keys):
        subprocess.run(self.tmux + ["send-keys", "-t", "top", *keys], check=True)

    def test_sort_keys_and_quit(self):
        subprocess.run(self.tmux + ["new-session", "-d", "-s", "top", "-x", "100", "-y", "30",
                                    f"{TOP} --interval 200 {self.server.metrics_port}"], check=True)
        wait_for(lambda: "vOPS/S" in self.heading(), "the table, sorted by OPS/S")
        screen = self.screen()
        self.assertIn("HTTP ", screen)
        self.assertIn("q quit", screen)
        self.keys("l")  # by loop: 0, 1, then the total
        wait_for(lambda: "vLOOP" in self.heading(), "the sort by LOOP")
        wait_for(lambda: self.rows() == ["0", "1", "total"], "rows in loop order")
        self.keys("r")
        wait_for(lambda: "^LOOP" in self.heading(), "the reversed sort")
        wait_for(lambda: self.rows() == ["1", "0", "total"], "rows in reverse loop order")
        self.keys("t")
        wait_for(lambda: "vTASKS" in self.heading(), "the sort by TASKS")
        self.keys("Right")  # the next column after TASKS wraps to LOOP
        wait_for(lambda: "LOOP" in self.heading() and "vTASKS" not in self.heading(), "the sort to move")
        self.keys("q")
        wait_for(lambda: subprocess.run(self.tmux + ["has-session", "-t", "top"], capture_output=True).returncode != 0,
                 "ringio-top to quit on q")


class ArgumentsTest(unittest.TestCase):
    def assert_usage(self, *args):
        r = top(*args)
        self.assertEqual(r.returncode, 2, f"{args}: {r.stdout} {r.stderr}")
        self.assertIn("usage: ringio-top", r.stderr)

    def test_bad_arguments(self):
        self.assert_usage()  # no target
        self.assert_usage("--once", "--json")
        self.assert_usage("--json", "9100")  # --json needs --once
        self.assert_usage("--once", "--sort", "nope", "9100")
        self.assert_usage("--once", "--interval", "10", "9100")
        self.assert_usage("--once", "--interval", "abc", "9100")
        self.assert_usage("--once", "--bogus", "9100")
        self.assert_usage("--once", "not a target")
        self.assert_usage("--once", "ftp://127.0.0.1:1/metrics")
        self.assert_usage("--once", "9100", "9101")
        self.assert_usage("9100")  # the live view, without a terminal

    def test_help(self):
        r = top("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--once", r.stdout)

    def test_unreachable(self):
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        r = top("--once", port)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"ringio-top: cannot read http://127.0.0.1:{port}/metrics", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_not_a_metrics_page(self):
        server = Server(threads=1)
        try:
            r = top("--once", server.port)  # the server's own port: /metrics is not found
            self.assertEqual(r.returncode, 1)
            self.assertIn("answered 404", r.stderr)
        finally:
            server.stop()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    TOP, HTTP_SERVER = sys.argv[1], sys.argv[2]
    result = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun and len(result.skipped) == result.testsRun else 0)
