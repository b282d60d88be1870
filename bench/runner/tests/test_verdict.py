# SPDX-License-Identifier: Apache-2.0
"""Verdicts from the spread of per-round ratios, and the quick default's plan."""
import unittest
from unittest import mock

from runner import clients, main, report, scenarios, servers, stats, targets, verdict

from .fixtures import cell_runs

BASE = lambda scenario: "ringio-uring"  # noqa: E731
LABEL = "connections=50 length=512"
CELL = {"threads": 1, "connections": 50, "length": 512}


class JudgeTest(unittest.TestCase):
    def test_yes_when_every_round_clears(self):
        j = verdict.judge([0.97, 1.02, 0.99], 0.95, True)
        self.assertEqual((j["met"], j["low"], j["high"], j["n"]), (True, 0.97, 1.02, 3))
        self.assertEqual(j["ratio"], 0.99)

    def test_no_when_every_round_misses(self):
        self.assertFalse(verdict.judge([0.80, 0.90, 0.94], 0.95, True)["met"])
        self.assertFalse(verdict.judge([1.06, 1.2], 1.05, False)["met"])

    def test_within_noise_when_the_spread_covers_the_limit(self):
        self.assertEqual(verdict.judge([0.90, 0.97, 1.01], 0.95, True)["met"], verdict.NOISE)
        self.assertEqual(verdict.judge([1.00, 1.08], 1.05, False)["met"], verdict.NOISE)

    def test_lower_is_better(self):
        self.assertTrue(verdict.judge([0.70, 0.80], 0.85, False)["met"])

    def test_one_round_decides_alone(self):
        j = verdict.judge([0.94], 0.95, True)
        self.assertEqual((j["met"], j["n"], j["low"], j["high"]), (False, 1, 0.94, 0.94))
        self.assertEqual(verdict.measured_text(j, 0.95), "0.940x (1 round)")
        self.assertTrue(verdict.judge([0.96], 0.95, True)["met"])

    def test_zero_spread(self):
        self.assertTrue(verdict.judge([1.0, 1.0, 1.0], 0.95, True)["met"])
        self.assertFalse(verdict.judge([0.9, 0.9, 0.9], 0.95, True)["met"])
        # On the limit counts as meeting it, from either side.
        self.assertTrue(verdict.judge([0.95, 0.95], 0.95, True)["met"])
        self.assertTrue(verdict.judge([1.05, 1.05], 1.05, False)["met"])

    def test_no_ratios(self):
        self.assertIsNone(verdict.judge([], 0.95, True))

    def test_measured_text(self):
        j = verdict.judge([0.9, 0.97, 1.01], 0.95, True)
        self.assertEqual(verdict.measured_text(j, 0.95), "0.970x (0.900\u20131.010, 3 rounds)")
        # Rounding that would put a ratio on the limit shows more digits.
        j = verdict.judge([0.94999, 1.0], 0.95, True)
        self.assertIn("0.94999", verdict.measured_text(j, 0.95))
        self.assertIn("x beast (", verdict.measured_text(j, 0.95, " beast"))


class PairedRatiosTest(unittest.TestCase):
    def test_rounds_both_sides_have(self):
        mine = [[1, 90.0], [2, 100.0], [3, 110.0]]
        theirs = [[1, 100.0], [3, 100.0], [4, 50.0]]
        self.assertEqual(verdict.paired_ratios(mine, theirs), [0.9, 1.1])
        self.assertEqual(verdict.paired_ratios(mine, theirs, invert=True), [100 / 90, 100 / 110])

    def test_zero_and_missing(self):
        self.assertEqual(verdict.paired_ratios([[1, 5.0], [2, None]], [[1, 0.0], [2, 1.0]]), [])
        self.assertEqual(verdict.paired_ratios(None, [[1, 1.0]]), [])


def rows_for(values):
    s = stats.summarize(cell_runs("echo", LABEL, values, cell=CELL), BASE)
    return {r["target"]: r for r in targets.evaluate(s, [], False, ["echo"]) if r["cell"] == LABEL}


class TargetSpreadTest(unittest.TestCase):
    def test_summary_keeps_each_rounds_figure(self):
        s = stats.summarize(cell_runs("echo", LABEL, {"ringio-uring": [(1.0, 5.0), (2.0, 6.0)]}), BASE)
        self.assertEqual(s[0]["rounds"]["throughput"], [[1, 1.0], [2, 2.0]])
        self.assertEqual(s[0]["rounds"]["server_us"], [[1, 5.0], [2, 6.0]])

    def test_rounds_are_paired_not_medians(self):
        # Medians 100 vs 100 would say 1.00x; round by round ringio is 0.80x, 1.25x, 1.00x.
        rows = rows_for({"ringio-uring": [(80.0, 5.0), (125.0, 5.0), (100.0, 5.0)],
                         "raw-uring": [(100.0, 5.0), (100.0, 5.0), (100.0, 5.0)]})
        tp = rows["echo: throughput >= 0.95x raw-uring"]
        self.assertEqual(tp["met"], verdict.NOISE)
        self.assertEqual(tp["measured"], "1.000x (0.800\u20131.250, 3 rounds)")
        self.assertEqual((tp["spread"], tp["rounds"]), ([0.8, 1.25], 3))
        cpu = rows["echo: server CPU per round trip <= 1.05x raw-uring"]
        self.assertEqual((cpu["met"], cpu["measured"]), (True, "1.000x (1.000\u20131.000, 3 rounds)"))

    def test_yes_no_and_noise_together(self):
        rows = rows_for({"ringio-uring": [(99.0, 5.0), (98.0, 5.1), (97.0, 4.9)],
                         "raw-uring": [(100.0, 4.0), (100.0, 4.1), (100.0, 4.0)],
                         "asio-epoll": [(90.0, 5.8), (90.0, 6.1), (90.0, 5.5)]})
        self.assertIs(rows["echo: throughput >= 0.95x raw-uring"]["met"], True)
        self.assertIs(rows["echo: server CPU per round trip <= 1.05x raw-uring"]["met"], False)
        # 5.0/5.8 = 0.862, 5.1/6.1 = 0.836, 4.9/5.5 = 0.891: covers 0.85
        self.assertEqual(rows["echo: server CPU per round trip <= 0.85x asio-epoll"]["met"], verdict.NOISE)

    def test_summaries_without_rounds_use_the_medians(self):
        s = stats.summarize(cell_runs("echo", LABEL, {"ringio-uring": [(96.0, 5.0)], "raw-uring": [(100.0, 5.0)]},
                                      cell=CELL), BASE)
        for g in s:
            del g["rounds"]
        row = [r for r in targets.evaluate(s, [], False, ["echo"])
               if r["target"] == "echo: throughput >= 0.95x raw-uring"][0]
        self.assertEqual((row["measured"], row["met"]), ("0.960x (1 round)", True))


class QuickDefaultTest(unittest.TestCase):
    def test_defaults(self):
        a = main.parse_args([])
        self.assertEqual(a.scenarios, [s for s in scenarios.ORDER if s in scenarios.QUICK_SERVERS])
        self.assertEqual(set(a.scenarios), {"echo", "pingpong", "http-wrk", "churn"})
        self.assertEqual(a.repeats, scenarios.QUICK_REPEATS)
        self.assertEqual(a.scenario_rounds, {"pingpong": 8, "echo": 8})
        self.assertEqual(a.scenario_servers, scenarios.QUICK_SERVERS)
        self.assertIn("raw-uring", a.scenario_servers["echo"])
        self.assertIn("nginx", a.scenario_servers["http-wrk"])
        self.assertGreaterEqual(scenarios.QUICK_REPEATS, 5)
        self.assertGreaterEqual(scenarios.cells("echo", False)[0]["duration"], 2)

    def test_full_is_unchanged(self):
        a = main.parse_args(["--full"])
        self.assertEqual(a.repeats, 3)
        self.assertEqual((a.scenario_servers, a.scenario_rounds), ({}, {}))
        self.assertEqual(a.servers, servers.ORDER)
        self.assertEqual(a.scenarios, scenarios.ORDER)
        self.assertEqual(scenarios.cells("echo", True)[0]["duration"], 5)

    def test_named_servers_and_scenarios(self):
        a = main.parse_args(["--servers", "ringio-uring,raw-uring"])
        self.assertEqual(a.scenario_servers, {})
        self.assertEqual(a.servers, ["ringio-uring", "raw-uring"])
        self.assertEqual(set(a.scenarios), set(scenarios.QUICK_SERVERS))
        a = main.parse_args(["--scenarios", "echo,http-idle", "--repeats", "2"])
        self.assertEqual(a.scenario_servers["echo"], scenarios.QUICK_SERVERS["echo"])
        self.assertEqual(a.scenario_servers["http-idle"], servers.ORDER)  # not a quick default scenario: all
        self.assertEqual((a.repeats, a.scenario_rounds), (2, {}))  # --repeats holds for every scenario

    def test_plan_fits_in_five_minutes(self):
        """With every binary present, the quick default's estimate (start-up,
        timed rounds, syscall runs) stays under 5 minutes."""
        a = main.parse_args([])
        with mock.patch.object(servers, "check", lambda *args: None), \
                mock.patch.object(clients, "available", lambda *args: None):
            plan, skipped = main.make_plan(a, servers.Layout("/nonexistent"), 2, [0], 1 << 20, 28232)
        self.assertEqual(skipped, [])
        for p in plan:
            self.assertEqual(p["subjects"], scenarios.QUICK_SERVERS[p["scenario"]])
            self.assertEqual(p["rounds"], scenarios.QUICK_ROUNDS.get(p["scenario"], scenarios.QUICK_REPEATS))
            self.assertTrue(p["cells"] and all(c["status"] == "run" for c in p["cells"]))
        seconds = main.estimate(plan, a.repeats, True)
        self.assertLess(seconds, 300)
        self.assertGreater(seconds, 120)  # the estimate counts the rounds, not a token figure

    def test_rounds_text(self):
        self.assertEqual(report.rounds_text(3), "3 repeats")
        self.assertEqual(report.rounds_text(6, {"pingpong": 8, "echo": 8, "churn": 6}),
                         "6 repeats (pingpong, echo: 8)")

    def test_unselected_peer_says_quick_default(self):
        rows = targets.evaluate([], [], False, ["echo"], {"echo": ["ringio-uring", "raw-uring"]})
        tok = [r for r in rows if "tokio-mt" in r["target"] and r["target"].startswith("echo")][0]
        self.assertEqual(tok["measured"], "not measured: tokio-mt not run in echo (quick default; --servers or --full)")
        http = [r for r in rows if r["target"].startswith("http-ab")][0]
        self.assertIn("http-ab not selected (quick default; --scenarios or --full)", http["measured"])


if __name__ == "__main__":
    unittest.main()
