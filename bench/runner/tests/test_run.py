# SPDX-License-Identifier: Apache-2.0
"""One whole run against a stand-in server and client (Python scripts that
follow the real programs' command lines), and the clean-up of leftovers."""
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from runner import execute, measure, procs, scenarios, servers

ECHO_SERVER = """\
#!{py}
import socket, sys, threading
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(128)
print(f"echo_server: listening on 127.0.0.1:{{port}}, 1 thread, backend fake", flush=True)
def serve(c):
    while True:
        d = c.recv(65536)
        if not d: return
        c.sendall(d)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

ECHO_BENCH = """\
#!{py}
import json, socket, sys, time
args = sys.argv[1:]
opt = lambda k: args[args.index("--" + k) + 1]
s = socket.create_connection(("127.0.0.1", int(opt("port"))))
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < float(opt("duration")):
    s.sendall(b"x" * int(opt("length")))
    got = 0
    while got < int(opt("length")):
        got += len(s.recv(65536))
    n += 1
dt = time.monotonic() - t0
print("RESULT " + json.dumps({{"requests_per_s": n / dt, "p50_us": 10, "p90_us": 20, "p99_us": 30, "p999_us": 40,
                               "max_us": 50, "requests": n, "errors": 0}}))
"""


def install(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text.format(py=sys.executable))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class RunOneTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.TemporaryDirectory()
        install(os.path.join(self.root.name, "build/bench/apps/echo_server"), ECHO_SERVER)
        install(os.path.join(self.root.name, "build/bench/apps/echo_bench"), ECHO_BENCH)
        cpus = sorted(os.sched_getaffinity(0))
        s, c = procs.split_cpus(cpus)
        self.ctx = execute.Context(servers.Layout(self.root.name), s, c, perf=False, ready_timeout=10)

    def tearDown(self):
        procs.kill_all()
        self.root.cleanup()

    def test_measured_run(self):
        scen = scenarios.SCENARIOS["echo"]
        cell = {"threads": 1, "connections": 1, "length": 64, "duration": 0.5}
        rec = execute.run_one(self.ctx, scen, cell, "ringio-uring", 1)
        self.assertTrue(rec["ok"], rec.get("error"))
        self.assertGreater(rec["metrics"]["ops"], 10)
        self.assertEqual(rec["server_cmd"][-2:], ["--backend", "uring"])
        self.assertIn("--warmup", rec["client_cmd"])
        self.assertTrue(rec["server_line"].startswith("echo_server: listening"))
        self.assertEqual(rec["server_stop"], "SIGTERM")
        self.assertGreater(rec["per_op"]["server_us"], 0)
        self.assertGreater(rec["per_op"]["client_us"], 0)
        self.assertGreaterEqual(rec["wall_s"], 0.5)
        self.assertEqual(procs.live_pids(), [])
        self.assertEqual(self.ctx.first_lines["ringio-uring"], rec["server_line"])

    def test_server_that_dies_at_start(self):
        install(os.path.join(self.root.name, "build/bench/apps/echo_server"),
                "#!/bin/sh\necho 'cannot listen: boom' >&2\nexit 1\n")
        rec = execute.run_one(self.ctx, scenarios.SCENARIOS["echo"],
                              {"threads": 1, "connections": 1, "length": 8, "duration": 0.2}, "ringio-epoll", 1)
        self.assertFalse(rec["ok"])
        self.assertTrue(rec["start_failed"])
        self.assertIn("exited with status 1 before serving: cannot listen: boom", rec["error"])

    def test_server_that_never_listens(self):
        install(os.path.join(self.root.name, "build/bench/apps/echo_server"), "#!/bin/sh\necho hi\nexec sleep 30\n")
        self.ctx.ready_timeout = 0.5
        rec = execute.run_one(self.ctx, scenarios.SCENARIOS["echo"],
                              {"threads": 1, "connections": 1, "length": 8, "duration": 0.2}, "ringio-epoll", 1)
        self.assertIn("did not accept connections", rec["error"])
        self.assertEqual(procs.live_pids(), [])

    def test_missing_client_output(self):
        install(os.path.join(self.root.name, "build/bench/apps/echo_bench"), "#!/bin/sh\necho oops >&2\nexit 1\n")
        rec = execute.run_one(self.ctx, scenarios.SCENARIOS["echo"],
                              {"threads": 1, "connections": 1, "length": 8, "duration": 0.2}, "ringio-uring", 1)
        self.assertFalse(rec["ok"])
        self.assertIn("no RESULT line", rec["error"])
        self.assertIn("oops", rec["error"])


class LeftoverTest(unittest.TestCase):
    def test_leftovers_of_a_dead_runner_are_killed(self):
        dead = subprocess.Popen(["true"])
        dead.wait()
        d = tempfile.mkdtemp(prefix=f"{procs.TMP_PREFIX}{dead.pid}-")
        mine = tempfile.mkdtemp(prefix=procs.tmp_prefix())
        orphan = subprocess.Popen(["sleep", "30"], cwd=d)
        alive = subprocess.Popen(["sleep", "30"], cwd=mine)
        try:
            killed = procs.reap_leftovers()
            self.assertTrue(any(k.startswith(f"{orphan.pid} sleep") for k in killed), killed)
            self.assertEqual(orphan.wait(5), -9)
            self.assertIsNone(alive.poll())  # a live runner's server is left alone
            self.assertFalse(os.path.exists(d))
            self.assertTrue(os.path.exists(mine))
        finally:
            alive.kill()
            alive.wait()
            os.rmdir(mine)


class MachineTest(unittest.TestCase):
    def test_proc_stat(self):
        text = textwrap.dedent("""\
            cpu  100 5 50 1000 7 3 2 10 0 0
            cpu0 50 2 25 500 3 1 1 5 0 0
            """)
        busy, steal = measure.parse_proc_stat(text)
        self.assertAlmostEqual(busy, 160 / measure.CLK_TCK)
        self.assertAlmostEqual(steal, 10 / measure.CLK_TCK)

    def test_live(self):
        b0, _ = measure.machine_cpu()
        t = time.process_time()
        while time.process_time() - t < 0.05:
            pass
        self.assertGreater(measure.machine_cpu()[0], b0)


if __name__ == "__main__":
    unittest.main()
