# SPDX-License-Identifier: Apache-2.0
"""The spawn scenario: its grid, commands, parser, summary and report section."""
import unittest

from runner import main, report, scenarios, spawn

RINGIO_OUT = ('RESULT {"subject": "ringio", "backend": "uring", "program": "echo", "concurrency": 8, '
              '"spawns": 500, "seconds": 0.25, "per_s": 2000.0, "cpu_self_s": 0.05, "errors": 0}\n')


class FakeLayout:
    root = "/r"
    build = "build/bench"

    def app(self, name):
        return "/r/build/apps/" + name


class Spawn(unittest.TestCase):
    def test_grid(self):
        self.assertEqual([(c["program"], c["concurrency"]) for c in spawn.cells(False)], [("echo", 1), ("echo", 8)])
        full = spawn.cells(True)
        self.assertEqual({c["program"] for c in full}, {"echo", "true"})
        self.assertEqual(sorted({c["concurrency"] for c in full}), [1, 8, 64])
        self.assertEqual(spawn.label(spawn.cells(False)[1]), "echo concurrency=8 count=2000")

    def test_commands(self):
        cell = {"program": "echo", "concurrency": 8, "count": 500}
        r = spawn.command(FakeLayout(), "ringio", cell, "epoll")
        self.assertEqual(r, ["/r/build/apps/spawn_bench", "--count", "500", "--concurrency", "8", "--program", "echo",
                             "--backend", "epoll"])
        t = spawn.command(FakeLayout(), "tokio", cell)
        self.assertEqual(t[0], "/r/bench/peers/tokio/target/release/tokio_spawn_bench")
        self.assertEqual(t[1:], r[1:7])

    def test_parse_and_summary(self):
        self.assertEqual(spawn.parse(RINGIO_OUT), (500, 0.25, 0.05))
        self.assertIsNone(spawn.parse("no result\n"))
        s = spawn.summarize([{"per_s": 10, "cpu_us_per_spawn": 3, "cpu_all_us_per_spawn": 9},
                             {"per_s": 30, "cpu_us_per_spawn": 1, "cpu_all_us_per_spawn": 7}])
        self.assertEqual(s["per_s"], {"median": 20, "min": 10, "max": 30, "n": 2})
        self.assertEqual(s["cpu_all_us_per_spawn"]["median"], 8)

    def test_missing_programs(self):
        self.assertEqual(set(spawn.missing(FakeLayout())), {"ringio", "tokio"})
        self.assertIn("spawn_bench not built", spawn.available(FakeLayout()))

    def test_section(self):
        def sm(rate, cpu):
            return {"per_s": {"median": rate, "min": rate, "max": rate, "n": 3},
                    "cpu_us_per_spawn": {"median": cpu, "min": cpu, "max": cpu, "n": 3},
                    "cpu_all_us_per_spawn": {"median": cpu * 4, "min": cpu * 4, "max": cpu * 4, "n": 3}}
        rec = {"error": None, "subjects": ["ringio", "tokio"], "missing": {},
               "commands": {"ringio": "spawn_bench --count 500", "tokio": "tokio_spawn_bench --count 500"},
               "cells": [{"label": "echo concurrency=1 count=500",
                          "summary": {"ringio": sm(1000.0, 50.0), "tokio": sm(500.0, 100.0)}, "errors": []}]}
        text = spawn.section(rec)
        self.assertIn("| echo concurrency=1 count=500 | ringio | 1000 (1000\u20131000) | 50.0 (50.0\u201350.0) | "
                      "200.0 (200.0\u2013200.0) | 2.00x | 0.50x |", text)
        self.assertIn("|  | tokio | 500 (500\u2013500) |", text)
        self.assertIn("`spawn_bench --count 500`", text)
        self.assertEqual(report.scenario_section({"spawn": rec}, "spawn"), text)
        self.assertIn("Not run.", report.scenario_section({}, "spawn"))
        self.assertIn("Not run: x not built", spawn.section({"error": "x not built"}))

    def test_is_a_standalone_scenario(self):
        self.assertIn("spawn", scenarios.ORDER)
        self.assertIn("spawn", scenarios.STANDALONE)
        self.assertEqual(scenarios.cells("spawn", True), [])
        self.assertEqual(main.parse_args(["--scenarios", "spawn"]).scenarios, ["spawn"])


if __name__ == "__main__":
    unittest.main()
