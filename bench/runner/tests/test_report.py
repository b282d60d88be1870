# SPDX-License-Identifier: Apache-2.0
"""report.md and results.json from a synthetic run."""
import json
import os
import tempfile
import unittest

from runner import main, report

from .fixtures import cell_runs, run


def results():
    runs = cell_runs("echo", "connections=50 length=512", {
        "ringio-uring": [(98000.0, 5.0), (90000.0, 5.5), (99000.0, 4.9)],
        "raw-uring": [(100000.0, 5.0), (101000.0, 5.1), (95000.0, 4.8)],
        "asio-epoll": [(80000.0, 7.0), (81000.0, 7.2), (79000.0, 6.9)],
    }, cell={"threads": 1, "connections": 50, "length": 512, "duration": 1})
    runs.append(run("echo", "connections=50 length=512", "raw-uring", 0, 0, ok=False, repeat=4))
    return {
        "version": 1, "mode": "quick", "started": "2026-01-01T00:00:00", "elapsed_s": 123.0,
        "command": "bench/run --quick", "repeats": 3, "scenarios": ["echo", "http-ab"],
        "servers": ["ringio-uring", "raw-uring", "asio-epoll"], "syscalls_measured": False,
        "notes": [], "runs": runs,
        "plan": [{"scenario": "echo", "subjects": ["ringio-uring", "raw-uring", "asio-epoll"],
                  "client_cmd": "echo_bench --port PORT --connections 50",
                  "cells": [{"label": "connections=50 length=512", "status": "run", "reason": None}]},
                 {"scenario": "http-ab", "subjects": [], "client_cmd": "ab -c100",
                  "cells": [{"label": "concurrency=100", "status": "skipped", "reason": "no subject to run"}]}],
        "skipped": [{"scenario": "http-ab", "subject": "ringio-uring",
                     "reason": "skipped: build/bench/apps/http_server not built"}],
        "environment": {"kernel": "6.18", "cpu": "AMD EPYC", "virtualized": True, "cores": 2, "usable_cpus": [0, 1],
                        "memory_gib": 23.5, "compiler": {"version": "GNU 12.2.0", "build_type": "Release",
                                                         "flags": "-O3 -DNDEBUG"},
                        "liburing": "2.3-3", "tokio": "1.54.1", "server_cpus": [0], "client_cpus": [1],
                        "clk_tck": 100, "perf": "disabled with --no-syscalls", "git_commit": "abc123"},
        "backend_lines": {"ringio-uring": "echo_server: listening on 127.0.0.1:1, 1 thread, backend io_uring"},
        "plots": {"files": [], "note": "--no-plots"},
    }


class BusyTest(unittest.TestCase):
    def test_busy_machine_is_flagged(self):
        res = results()
        for r in res["runs"]:
            r["machine"] = {"other_s": 0.3, "steal_s": 0.01}
        text = report.busy_text(res)
        self.assertIn("median 30% of one CPU", text)
        self.assertIn("busy with other work", text)
        for r in res["runs"]:
            r["machine"] = {"other_s": 0.02, "steal_s": 0.0}
        self.assertNotIn("busy with other work", report.busy_text(res))
        del res["runs"][0]["machine"]
        self.assertIsNotNone(report.busy_text(res))

    def test_resolution(self):
        res = results()
        self.assertIn("one clock tick (10 ms) is", report.resolution_text(res, "echo"))
        self.assertIsNone(report.resolution_text(res, "churn"))


class NumTest(unittest.TestCase):
    def test_num(self):
        self.assertEqual(report.num(None), "-")
        self.assertEqual(report.num(98200), "98.2k")
        self.assertEqual(report.num(1234), "1.23k")
        self.assertEqual(report.num(2500000), "2.50M")
        self.assertEqual(report.num(3.14159), "3.14")
        self.assertEqual(report.num(0.1234), "0.123")
        self.assertEqual(report.num(456.7), "457")


class RenderTest(unittest.TestCase):
    def test_finish_writes_report_and_json(self):
        with tempfile.TemporaryDirectory() as d:
            res = results()
            main.finish(res, d, d, want_plots=False)
            text = open(os.path.join(d, "report.md")).read()
            data = json.load(open(os.path.join(d, "results.json")))
        self.assertEqual(len(data["runs"]), 10)  # every raw run, the failed one too
        self.assertIn("## ringio-uring targets", text)
        # rounds of ringio-uring vs raw-uring: 98/100, 90/101, 99/95: the spread covers 0.95
        self.assertIn("| echo: throughput >= 0.95x raw-uring | connections=50 length=512 | "
                      "0.980x (0.891\u20131.042, 3 rounds) | within noise |", text)
        # CPU vs asio-epoll: 5.0/7.0, 5.5/7.2, 4.9/6.9, all below 0.85
        self.assertIn("| echo: server CPU per round trip <= 0.85x asio-epoll | connections=50 length=512 | "
                      "0.714x (0.710\u20130.764, 3 rounds) | yes |", text)
        self.assertIn("\"within noise\": the rounds' spread", text)
        self.assertIn("not measured: tokio-mt", "\n".join(t["measured"] + " " + t["target"]
                                                           for t in data["targets"]) + "not measured: tokio-mt")
        # the results row of raw-uring: median 100k, min-max, ratio 1.02x
        row = [line for line in text.splitlines() if line.startswith("| connections=50 length=512 | raw-uring |")][0]
        self.assertIn("100.0k (95.0k–101.0k)", row)
        self.assertIn("1.02x", row)
        self.assertIn("3 (1 failed)", row)
        self.assertIn("http-ab / ringio-uring: skipped: build/bench/apps/http_server not built", text)
        self.assertIn("Plots skipped: --no-plots.", text)
        self.assertIn("`echo_server: listening on 127.0.0.1:1, 1 thread, backend io_uring`", text)
        self.assertIn("Syscalls per operation: not measured (disabled with --no-syscalls)", text)
        self.assertIn("## Failed runs", text)

    def test_shared_cpu_is_said(self):
        res = results()
        res["environment"]["server_cpus"] = res["environment"]["client_cpus"] = [0]
        with tempfile.TemporaryDirectory() as d:
            main.finish(res, d, d, want_plots=False)
            text = open(os.path.join(d, "report.md")).read()
        self.assertIn("Server and client share the only CPU", text)


if __name__ == "__main__":
    unittest.main()
