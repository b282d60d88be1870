# SPDX-License-Identifier: Apache-2.0
"""Metrics on and off as two servers: command lines, environment, plan, baseline."""
import os
import tempfile
import unittest

from runner import main, procs, servers
from runner.tests.test_plan import fake_layout


class MetricsCostTest(unittest.TestCase):
    def test_on_serves_metrics_and_off_turns_timing_off(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["pong", "echo_server", "http_server"])
            on = servers.spec(lay, "ringio-uring-metrics", "http", 9000, {"threads": 2}, d)
            self.assertEqual(on.argv[1:], ["--port", "9000", "--threads", "2", "--backend", "uring",
                                           "--metrics-port", "0"])
            self.assertEqual(on.env, {})
            off = servers.spec(lay, "ringio-uring-nometrics", "echo", 9000, {"threads": 1}, d)
            self.assertEqual(off.argv[1:], ["--port", "9000", "--threads", "1", "--backend", "uring"])
            self.assertEqual(off.env, {"RINGIO_LOOP_TIMING": "0"})
            cell = {"threads": 1, "sessions": 100, "blocksize": 16384}
            pong = servers.spec(lay, "ringio-uring-metrics", "pong", 9000, cell, d)
            self.assertEqual(pong.argv[-2:], ["--metrics-port", "0"])
            # Other servers start with the runner's environment, unchanged.
            self.assertEqual(servers.spec(lay, "ringio-uring", "echo", 9000, {"threads": 1}, d).env, {})

    def test_flag_chooses_the_pair(self):
        a = main.parse_args(["--metrics-cost", "--scenarios", "echo"])
        self.assertEqual(a.servers, ["ringio-uring-metrics", "ringio-uring-nometrics"])
        with self.assertRaises(SystemExit):
            main.parse_args(["--metrics-cost", "--servers", "ringio-uring"])

    def test_plan_runs_both(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["echo_server", "echo_bench", "http_server", "pong", "ping"])
            a = main.parse_args(["--metrics-cost", "--scenarios", "pingpong,echo"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 1 << 20, 28232)
            self.assertEqual(skipped, [])
            for p in plan:
                self.assertEqual(p["subjects"], servers.METRICS_COST)
                self.assertTrue(any(c["status"] == "run" for c in p["cells"]))

    def test_baseline_is_metrics_off_without_ringio_uring(self):
        self.assertEqual(main.baseline_of("echo", servers.METRICS_COST), "ringio-uring-nometrics")
        self.assertEqual(main.baseline_of("echo", ["ringio-uring"] + servers.METRICS_COST), "ringio-uring")
        self.assertEqual(main.baseline_of("echo"), "ringio-uring")

    def test_environment_reaches_the_server(self):
        with tempfile.TemporaryDirectory() as d:
            out, err = os.path.join(d, "out"), os.path.join(d, "err")
            child = procs.Child(["/bin/sh", "-c", "echo $RINGIO_LOOP_TIMING"], out, err,
                                env=dict(os.environ, **servers.VARIANT_ENV["ringio-uring-nometrics"]))
            self.assertTrue(child.wait(10))
            self.assertEqual(child.output().strip(), "0")


if __name__ == "__main__":
    unittest.main()
