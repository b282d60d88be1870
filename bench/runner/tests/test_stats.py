# SPDX-License-Identifier: Apache-2.0
"""Medians, spreads, ratios and the target table."""
import unittest

from runner import stats, targets

from .fixtures import cell_runs, run

BASE = lambda scenario: "ringio-uring"  # noqa: E731


class SpreadTest(unittest.TestCase):
    def test_spread(self):
        self.assertEqual(stats.spread([3, 1, 2]), {"median": 2, "min": 1, "max": 3, "n": 3})
        self.assertEqual(stats.spread([4, None, 1, 2, 3])["median"], 2.5)
        self.assertIsNone(stats.spread([None]))
        self.assertIsNone(stats.spread([]))

    def test_ratio(self):
        self.assertEqual(stats.ratio(3, 2), 1.5)
        self.assertIsNone(stats.ratio(3, 0))
        self.assertIsNone(stats.ratio(None, 2))


class SummarizeTest(unittest.TestCase):
    def setUp(self):
        self.runs = cell_runs("echo", "connections=50", {
            "ringio-uring": [(100.0, 4.0), (80.0, 5.0), (120.0, 6.0)],
            "raw-uring": [(200.0, 8.0), (190.0, 9.0), (300.0, 7.0)],
        })
        self.runs.append(run("echo", "connections=50", "ringio-uring", 1.0, 99.0, repeat=None, kind="syscalls",
                             syscalls=0.5))
        self.runs.append(run("echo", "connections=50", "raw-uring", 1.0, 99.0, repeat=None, kind="syscalls",
                             syscalls=2.0))
        self.runs.append(run("echo", "connections=50", "raw-uring", 0, 0, repeat=4, ok=False))

    def test_medians_exclude_syscall_and_failed_runs(self):
        s = stats.summarize(self.runs, BASE)
        me = stats.find(s, "echo", "connections=50", "ringio-uring")
        raw = stats.find(s, "echo", "connections=50", "raw-uring")
        self.assertEqual(me["throughput"], {"median": 100.0, "min": 80.0, "max": 120.0, "n": 3})
        self.assertEqual(me["server_us"]["median"], 5.0)
        self.assertEqual(raw["runs_ok"], 3)
        self.assertEqual(raw["failed"], ["boom"])
        self.assertEqual(me["syscalls_per_op"]["median"], 0.5)

    def test_ratios_are_of_medians_to_baseline(self):
        s = stats.summarize(self.runs, BASE)
        raw = stats.find(s, "echo", "connections=50", "raw-uring")
        self.assertAlmostEqual(raw["ratio"]["throughput"], 2.0)
        self.assertAlmostEqual(raw["ratio"]["server_us"], 8.0 / 5.0)
        self.assertAlmostEqual(raw["ratio"]["syscalls"], 4.0)
        me = stats.find(s, "echo", "connections=50", "ringio-uring")
        self.assertEqual(me["ratio"]["throughput"], 1.0)

    def test_no_baseline(self):
        runs = [r for r in self.runs if r["subject"] != "ringio-uring"]
        raw = stats.find(stats.summarize(runs, BASE), "echo", "connections=50", "raw-uring")
        self.assertIsNone(raw["ratio"]["throughput"])

    def test_errors_and_latency(self):
        runs = [run("churn", "concurrency=100", "a", 1.0, 1.0, errors=2, lat={"p99": 10.0}),
                run("churn", "concurrency=100", "a", 1.0, 1.0, errors=3, lat={"p99": 30.0}),
                run("churn", "concurrency=100", "a", 1.0, 1.0, errors=0, lat={"p99": 20.0})]
        g = stats.summarize(runs, BASE)[0]
        self.assertEqual(g["errors"], 5)
        self.assertEqual(g["latency_us"], {"p99": 20.0})


def summary_for(values_by_cell, scenario="echo"):
    runs = []
    for label, (cell, values) in values_by_cell.items():
        runs += cell_runs(scenario, label, values, cell=cell)
    return stats.summarize(runs, BASE)


class TargetsTest(unittest.TestCase):
    def test_met_and_missed(self):
        s = summary_for({"connections=50 length=512": ({"threads": 1, "connections": 50}, {
            "ringio-uring": [(96.0, 5.2)], "raw-uring": [(100.0, 5.0)], "asio-epoll": [(90.0, 6.0)],
            "tokio-mt": [(90.0, 6.2)], "tokio-percore": [(90.0, 10.0)]})})
        rows = targets.evaluate(s, [], full=False, selected=["echo"])
        by = {(r["target"], r["cell"]): r for r in rows}
        tp = by[("echo: throughput >= 0.95x raw-uring", "connections=50 length=512")]
        self.assertTrue(tp["met"])
        self.assertEqual(tp["measured"], "0.960x (1 round)")
        cpu = by[("echo: server CPU per round trip <= 1.05x raw-uring", "connections=50 length=512")]
        self.assertTrue(cpu["met"])  # 1.04
        asio = by[("echo: server CPU per round trip <= 0.85x asio-epoll", "connections=50 length=512")]
        self.assertFalse(asio["met"])  # 0.867
        tok = by[("echo: server CPU per round trip <= 0.85x tokio-percore", "connections=50 length=512")]
        self.assertTrue(tok["met"])  # 0.52
        self.assertEqual(by[("echo: server CPU per round trip <= 0.85x tokio-mt",
                             "connections=50 length=512")]["met"], True)  # 0.839

    def test_rounding_does_not_hide_the_side_of_the_limit(self):
        s = summary_for({"connections=50 length=512": ({"threads": 1, "connections": 50}, {
            "ringio-uring": [(1.0, 0.85002)], "asio-epoll": [(1.0, 1.0)]})})
        row = [r for r in targets.evaluate(s, [], False, ["echo"]) if "asio-epoll" in r["target"]][0]
        self.assertEqual((row["measured"], row["met"]), ("0.85002x (1 round)", False))

    def test_unselected_server(self):
        rows = targets.evaluate([], [], False, ["echo"], ["ringio-uring", "raw-uring"])
        tok = [r for r in rows if "tokio-mt" in r["target"]][0]
        self.assertEqual(tok["measured"], "not measured: tokio-mt not selected (--servers)")

    def test_missing_data_says_why(self):
        skipped = [{"scenario": "pingpong", "subject": "ringio-uring", "reason": "skipped: pong not built"},
                   {"scenario": "echo", "reason": "skipped: build/bench/apps/echo_bench not built"},
                   {"scenario": "echo", "subject": "ringio-uring", "reason": "skipped: echo_server not built"}]
        rows = targets.evaluate([], skipped, full=False, selected=["echo", "pingpong"])
        echo = [r for r in rows if r["target"].startswith("echo at 1 thread")][0]
        self.assertEqual(echo["measured"], "not measured: skipped: build/bench/apps/echo_bench not built")
        ping = [r for r in rows if r["target"].startswith("pingpong")][0]
        self.assertEqual(ping["measured"], "not measured: ringio-uring skipped: pong not built")
        self.assertIsNone(ping["met"])
        churn = churn_row(rows)
        self.assertIn("full grid only", churn["measured"])
        rows = targets.evaluate([], [], full=True, selected=["echo"])
        self.assertIn("not selected", churn_row(rows)["measured"])

    def test_only_one_thread_cells_count_for_raw_uring(self):
        s = summary_for({"threads=2 sessions=100": ({"threads": 2, "sessions": 100}, {
            "ringio-uring": [(1.0, 1.0)], "raw-uring": [(2.0, 1.0)]})}, scenario="pingpong")
        rows = [r for r in targets.evaluate(s, [], False, ["pingpong"]) if r["target"].startswith("pingpong")]
        self.assertEqual(len(rows), 1)
        self.assertIsNone(rows[0]["met"])

    def test_churn_full(self):
        runs = [run("churn", "concurrency=10000", "ringio-uring", 1.0, 1.0, errors=0, repeat=i) for i in (1, 2, 3)]
        rows = targets.evaluate(stats.summarize(runs, BASE), [], full=True, selected=["churn"])
        self.assertTrue(churn_row(rows)["met"])
        runs[1]["metrics"]["errors"] = 4
        rows = targets.evaluate(stats.summarize(runs, BASE), [], full=True, selected=["churn"])
        self.assertFalse(churn_row(rows)["met"])
        self.assertEqual(churn_row(rows)["measured"], "4 failed sessions in 3 runs")


class HttpAndThreadTargets(unittest.TestCase):
    def test_http_cpu_against_tokio_and_nginx(self):
        s = summary_for({"connections=100": ({"threads": 1, "connections": 100}, {
            "ringio-uring": [(100.0, 1.0)], "raw-uring": [(100.0, 1.0)], "tokio-mt": [(100.0, 2.0)],
            "tokio-percore": [(100.0, 1.0)], "nginx": [(100.0, 1.3)]})}, scenario="http-wrk")
        rows = {r["target"]: r for r in targets.evaluate(s, [], False, ["http-wrk"])
                if r["cell"] == "connections=100"}
        self.assertTrue(rows["http-wrk: throughput >= 0.95x raw-uring"]["met"])
        self.assertTrue(rows["http-wrk: server CPU per request <= 0.80x tokio-mt"]["met"])
        self.assertFalse(rows["http-wrk: server CPU per request <= 0.80x tokio-percore"]["met"])
        self.assertTrue(rows["http-wrk: server CPU per request <= 0.80x nginx"]["met"])

    def test_pingpong_ahead_of_asio(self):
        s = summary_for({"threads=2 sessions=1000": ({"threads": 2, "sessions": 1000}, {
            "ringio-uring": [(2.0, 1.0)], "asio-uring": [(1.0, 1.0)], "asio-epoll": [(3.0, 1.0)]})},
            scenario="pingpong")
        rows = {r["target"]: r for r in targets.evaluate(s, [], True, ["pingpong"]) if r["target"].startswith("threads")}
        self.assertTrue(rows["threads: pingpong: throughput >= 1.00x asio-uring"]["met"])
        self.assertFalse(rows["threads: pingpong: throughput >= 1.00x asio-epoll"]["met"])


def churn_row(rows):
    return [r for r in rows if r["target"].startswith("churn")][0]


if __name__ == "__main__":
    unittest.main()
