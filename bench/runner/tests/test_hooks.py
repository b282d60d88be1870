# SPDX-License-Identifier: Apache-2.0
"""The hooks' benchmarks: the hooked echo server in churn (its command line, the
default extra servers, its target against the fiber server) and the hiredis
scenario (cells, commands, parser, summaries, ratios, target, report section)."""
import os
import tempfile
import unittest

from runner import hiredis, main, report, scenarios, servers, stats, targets
from runner.tests.fixtures import cell_runs
from runner.tests.test_plan import fake_layout

RESULT = ('RESULT {"mode": "fibers", "clients": 1000, "connected": 1000, "failed_connections": 0, '
          '"gets": 200000, "errors": 0, "seconds": 2.0, "gets_per_s": 100000.0, "cpu_s": 1.5, '
          '"cpu_us_per_get": 7.5, "server_cpu_s": 1.0, "backend": "uring (flags X)"}\n')


class FakeLayout:
    root = "/r"

    def app(self, name):
        return "/r/build/apps/" + name


def hiredis_cell(clients, values):
    """values: {subject: [gets_per_s, ...]} -> a cell record as hiredis.run makes it."""
    runs = {s: [{"gets_per_s": g, "cpu_us_per_get": 1e6 / g, "server_us_per_get": 5.0, "cpu_use": 0.9,
                 "server_cpu_use": 0.5, "other_use": 0.2, "errors": 0, "failed_connections": 0} for g in v]
            for s, v in values.items()}
    summary = {s: hiredis.summarize(runs[s]) for s in values}
    return {"cell": {"clients": clients, "seconds": 1}, "label": f"clients={clients}", "runs": runs,
            "summary": summary, "ratios": hiredis.ratios(summary), "errors": []}


class HookedServer(unittest.TestCase):
    def test_command_line_and_modes(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["blocking_echo_hooked"])
            s = servers.spec(lay, "ringio-uring-hooked", "echo", 9000, {"threads": 1}, d)
            self.assertEqual(os.path.basename(s.argv[0]), "blocking_echo_hooked")
            self.assertEqual(s.argv[1:], ["--port", "9000", "--backend", "uring"])
            self.assertTrue(s.ready_line)
            e = servers.spec(lay, "ringio-epoll-hooked", "echo", 9000, {"threads": 1}, d)
            self.assertEqual(e.argv[-1], "epoll")
            with self.assertRaises(servers.Unavailable):
                servers.spec(lay, "ringio-uring-hooked", "echo", 9000, {"threads": 2}, d)
        for mode in ("pong", "http", "https", "ws"):
            self.assertFalse(servers.supports("ringio-uring-hooked", mode), mode)
        self.assertTrue(servers.supports("ringio-uring-hooked", "echo"))
        self.assertIn("ringio-uring-hooked", servers.KNOWN)
        self.assertNotIn("ringio-uring-hooked", servers.ORDER)  # named only, or churn's default extra

    def test_churn_adds_fibers_and_hooked_unless_servers_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["echo_server", "churn_bench", "blocking_echo_hooked"])
            a = main.parse_args(["--scenarios", "churn,echo"])
            plan, _ = main.make_plan(a, lay, 2, [0], 20000, 28232)
            by = {p["scenario"]: p for p in plan}
            self.assertEqual(by["churn"]["subjects"][-2:], ["ringio-uring-fibers", "ringio-uring-hooked"])
            self.assertNotIn("ringio-uring-hooked", by["echo"]["subjects"])
            a = main.parse_args(["--scenarios", "churn", "--servers", "ringio-uring"])
            plan, _ = main.make_plan(a, lay, 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], ["ringio-uring"])
            a = main.parse_args(["--scenarios", "churn", "--servers", "ringio-uring,ringio-uring-hooked"])
            plan, _ = main.make_plan(a, lay, 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], ["ringio-uring", "ringio-uring-hooked"])

    def test_target_hooked_against_fibers(self):
        runs = cell_runs("churn", "concurrency=1000", {
            "ringio-uring": [(10000, 30)] * 3, "ringio-uring-fibers": [(10000, 30), (9000, 31), (11000, 29)],
            "ringio-uring-hooked": [(9200, 40), (9100, 41), (9300, 39)]}, cell={"threads": 1, "concurrency": 1000})
        summary = stats.summarize(runs, lambda s: "ringio-uring")
        rows = [r for r in targets.evaluate(summary, [], False, ["churn"], ["ringio-uring"])
                if "hooked" in r["target"]]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["cell"], "concurrency=1000")
        self.assertAlmostEqual(rows[0]["ratio"], 9200 / 10000)
        self.assertTrue(rows[0]["met"])
        slow = cell_runs("churn", "concurrency=1000", {
            "ringio-uring-fibers": [(10000, 30)], "ringio-uring-hooked": [(8000, 40)]},
            cell={"threads": 1, "concurrency": 1000})
        row = [r for r in targets.evaluate(stats.summarize(slow, lambda s: "ringio-uring"), [], False)
               if "hooked" in r["target"]][0]
        self.assertFalse(row["met"])
        self.assertEqual(row["measured"], "0.800x (1 round)")

    def test_target_not_measured_says_why(self):
        rows = [r for r in targets.evaluate([], [], False, ["echo"], ["ringio-uring"]) if "hooked" in r["target"]]
        self.assertIsNone(rows[0]["met"])
        self.assertIn("churn not selected", rows[0]["measured"])
        only = cell_runs("churn", "concurrency=1000", {"ringio-uring": [(10000, 30)]},
                         cell={"threads": 1, "concurrency": 1000})
        skipped = [{"scenario": "churn", "subject": "ringio-uring-hooked",
                    "reason": "skipped: build/bench/apps/blocking_echo_hooked not built"}]
        rows = [r for r in targets.evaluate(stats.summarize(only, lambda s: "ringio-uring"), skipped, False)
                if "hooked" in r["target"]]
        self.assertIn("blocking_echo_hooked not built", rows[0]["measured"])
        self.assertIsNone(rows[0]["met"])


class Hiredis(unittest.TestCase):
    def test_cells_and_marks(self):
        self.assertEqual([c["clients"] for c in hiredis.cells(False)], [10, 100, 1000])
        self.assertTrue(all(c["seconds"] == hiredis.QUICK_SECONDS for c in hiredis.cells(False)))
        self.assertTrue(all(c["seconds"] == hiredis.FULL_SECONDS for c in hiredis.cells(True)))
        self.assertEqual(hiredis.cells(False, seconds=3)[0]["seconds"], 3)
        self.assertEqual(hiredis.label({"clients": 100}), "clients=100")
        self.assertIsNone(hiredis.mark({"clients": 1000}, 20000))
        self.assertIn("descriptor limit", hiredis.mark({"clients": 1000}, 1024))

    def test_commands(self):
        cell = {"clients": 1000, "seconds": 2}
        h = hiredis.client_command(FakeLayout(), "hooked", 7000, cell, 42)
        self.assertEqual(h, ["/r/build/apps/hiredis_bench_hooked", "--mode", "fibers", "--port", "7000", "--clients",
                             "1000", "--seconds", "2", "--server-pid", "42"])
        a = hiredis.client_command(FakeLayout(), "async", 7000, cell)
        self.assertEqual(a[:3], ["/r/build/apps/hiredis_bench", "--mode", "async"])
        self.assertNotIn("--server-pid", a)
        t = hiredis.client_command(FakeLayout(), "threads", 7000, dict(cell, seconds=0.5))
        self.assertEqual(t[2], "threads")
        self.assertEqual(t[t.index("--seconds") + 1], "0.5")
        r = hiredis.redis_command("/usr/bin/redis-server", 7000, "/tmp/d", 1000)
        for want in (["--port", "7000"], ["--bind", "127.0.0.1"], ["--save", ""], ["--appendonly", "no"],
                     ["--daemonize", "no"], ["--maxclients", "1064"], ["--dir", "/tmp/d"]):
            i = r.index(want[0])
            self.assertEqual(r[i:i + 2], want)

    def test_parse(self):
        p = hiredis.parse("hiredis_bench: starting\n" + RESULT)
        self.assertEqual(p["gets"], 200000)
        self.assertEqual(p["gets_per_s"], 100000.0)
        self.assertAlmostEqual(p["cpu_us_per_get"], 7.5)
        self.assertAlmostEqual(p["server_us_per_get"], 5.0)
        self.assertAlmostEqual(p["cpu_use"], 0.75)
        self.assertAlmostEqual(p["server_cpu_use"], 0.5)
        self.assertIsNone(hiredis.parse("no result\n"))
        nosrv = hiredis.parse(RESULT.replace('"server_cpu_s": 1.0', '"server_cpu_s": null'))
        self.assertIsNone(nosrv["server_us_per_get"])
        self.assertIsNone(nosrv["server_cpu_use"])

    def test_summary_ratios_and_order(self):
        c = hiredis_cell(1000, {"hooked": [90000, 100000, 110000], "async": [100000] * 3,
                                "threads": [20000, 30000, 40000]})
        self.assertEqual(c["summary"]["hooked"]["gets_per_s"], {"median": 100000, "min": 90000, "max": 110000,
                                                                 "n": 3})
        self.assertAlmostEqual(c["ratios"]["hooked/threads"], 100000 / 30000)
        self.assertAlmostEqual(c["ratios"]["hooked/async"], 1.0)
        self.assertAlmostEqual(c["ratios"]["async/threads"], 100000 / 30000)
        # GETs per client CPU second: the fixture's CPU per GET is 1e6 / GETs per second.
        self.assertAlmostEqual(c["ratios"]["cpu:hooked/threads"], 100000 / 30000)
        self.assertEqual(hiredis.ratios({"hooked": hiredis.summarize([])}), {})
        self.assertEqual([hiredis.order(r)[0] for r in range(3)], hiredis.SUBJECTS)
        self.assertEqual(sorted(hiredis.order(1)), sorted(hiredis.SUBJECTS))
        stale = dict(c, summary={}, ratios={})
        self.assertEqual(hiredis.resummarize({"cells": [stale]})["cells"][0]["ratios"], c["ratios"])

    def test_target(self):
        met = {"cells": [hiredis_cell(1000, {"hooked": [100000], "async": [100000], "threads": [30000]})],
               "marked": []}
        row = hiredis.targets(met)[0]
        self.assertEqual(row["cell"], "clients=1000")
        self.assertEqual(row["measured"], "3.33x")
        self.assertTrue(row["met"])
        missed = {"cells": [hiredis_cell(1000, {"hooked": [100000], "async": [100000], "threads": [50000]})],
                  "marked": []}
        self.assertFalse(hiredis.targets(missed)[0]["met"])
        self.assertIn("not selected", hiredis.targets(None, selected=False)[0]["measured"])
        broken = {"error": "build/bench/apps/hiredis_bench not built"}
        self.assertIn("not built", hiredis.targets(broken)[0]["measured"])
        marked = {"cells": [], "marked": [{"label": "clients=1000", "reason": "beyond the descriptor limit"}]}
        self.assertIn("descriptor limit", hiredis.targets(marked)[0]["measured"])
        self.assertIsNone(hiredis.targets({"cells": [], "marked": []})[0]["met"])

    def test_section(self):
        rec = {"cells": [hiredis_cell(10, {"hooked": [50000], "async": [60000], "threads": [40000]}),
                         hiredis_cell(1000, {"hooked": [90000], "async": [100000], "threads": [30000]})],
               "marked": [], "commands": {s: f"cmd-{s}" for s in hiredis.SUBJECTS}, "redis_command": "redis-server x"}
        text = report.scenario_section({"hiredis": rec}, "hiredis")
        self.assertIn("### hiredis", text)
        self.assertIn("| 1000 | hooked | 90000 (90000\u201390000) |", text)
        self.assertIn("| 1000 | 3.00x | 0.90x | 3.33x | 3.00x | 0.90x | 3.33x |", text)
        self.assertIn("`cmd-threads`", text)
        self.assertIn("Other work on the machine", text)
        self.assertIn("Not run: redis-server is not installed",
                      hiredis.section({"error": "redis-server is not installed", "cells": []}))
        self.assertIn("Not run.", report.scenario_section({}, "hiredis"))

    def test_is_a_scenario_of_its_own_in_the_plan(self):
        self.assertIn("hiredis", scenarios.ORDER)
        self.assertEqual(scenarios.cells("hiredis", False), [])
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["hiredis_bench"])
            a = main.parse_args(["--scenarios", "hiredis"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], [])
            self.assertIn("hiredis_bench_hooked not built", skipped[0]["reason"])
            a = main.parse_args(["--scenarios", "hiredis", "--where", "clients=1000"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 512, 28232)
            self.assertEqual(plan[0]["hiredis_cells"], ["clients=1000"])
            self.assertTrue(any(s.get("cell") == "clients=1000" and "descriptor" in s["reason"] for s in skipped))


if __name__ == "__main__":
    unittest.main()
