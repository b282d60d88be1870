# SPDX-License-Identifier: Apache-2.0
"""The fileio scenario: its cells, commands, output parsers, summaries and report section."""
import json
import unittest

from runner import fileio, main, report, scenarios

FIO_JSON = """note: both iodepth >= 1 and synchronous I/O engine are selected\n""" + json.dumps(
    {"jobs": [{"jobname": "randread", "job_runtime": 2000, "usr_cpu": 1.2, "sys_cpu": 21.7,
               "read": {"iops": 28080.9, "total_ios": 56190}}]})
RINGIO_OUT = ('RESULT {"subject": "ringio", "backend": "uring", "depth": 32, "block": 4096, "direct": true, '
              '"fixed": false, "reads": 53024, "seconds": 2.042814, "iops": 25956.4, "errors": 0}\n')


class FakeLayout:
    root = "/r"

    def app(self, name):
        return "/r/build/apps/" + name


class FileIo(unittest.TestCase):
    def test_cells_cover_direct_and_buffered_at_three_depths(self):
        cs = fileio.cells(False)
        self.assertEqual([(c["direct"], c["depth"]) for c in cs],
                         [(1, 1), (1, 32), (1, 128), (0, 1), (0, 32), (0, 128)])
        self.assertTrue(all(c["seconds"] == 1 for c in cs))
        self.assertTrue(all(c["seconds"] == 5 for c in fileio.cells(True)))
        self.assertEqual(fileio.label(cs[1]), "direct qd32")
        self.assertEqual(fileio.label(cs[3]), "buffered qd1")

    def test_both_commands_have_the_same_parameters(self):
        cell = {"direct": 1, "depth": 128, "seconds": 3}
        r = fileio.ringio_command(FakeLayout(), "/f", cell)
        f = fileio.fio_command("/f", cell)
        self.assertEqual(r[0], "/r/build/apps/file_bench")
        self.assertIn("--direct", r)
        self.assertEqual(r[r.index("--depth") + 1], "128")
        self.assertEqual(r[r.index("--block") + 1], "4096")
        self.assertIn("--ioengine=io_uring", f)
        self.assertIn("--iodepth=128", f)
        self.assertIn("--direct=1", f)
        self.assertIn("--bs=4096", f)
        self.assertIn("--runtime=3", f)
        self.assertIn("--rw=randread", f)
        self.assertIn("--invalidate=0", f)  # fio must not empty the page cache the other subject uses
        buffered = fileio.ringio_command(FakeLayout(), "/f", dict(cell, direct=0))
        self.assertNotIn("--direct", buffered)
        self.assertIn("--direct=0", fileio.fio_command("/f", dict(cell, direct=0)))

    def test_parsers(self):
        self.assertEqual(fileio.parse_ringio(RINGIO_OUT), (53024, 2.042814))
        self.assertIsNone(fileio.parse_ringio("nothing\n"))
        self.assertEqual(fileio.parse_fio(FIO_JSON), (56190, 2.0))
        self.assertIsNone(fileio.parse_fio("fio: error\n"))

    def test_summary_takes_medians_and_spread(self):
        s = fileio.summarize([{"iops": 10, "cpu_us_per_io": 3}, {"iops": 30, "cpu_us_per_io": 1},
                              {"iops": 20, "cpu_us_per_io": 2}])
        self.assertEqual(s["iops"], {"median": 20, "min": 10, "max": 30, "n": 3})
        self.assertEqual(s["cpu_us_per_io"]["median"], 2)
        self.assertEqual(fileio.summarize([{"iops": 1, "cpu_us_per_io": 1}, {"iops": 3, "cpu_us_per_io": 1}])
                         ["iops"]["median"], 2)
        self.assertIsNone(fileio.summarize([])["iops"])

    def test_section_puts_the_subjects_side_by_side(self):
        sm = {"iops": {"median": 1000.0, "min": 900.0, "max": 1100.0, "n": 3},
              "cpu_us_per_io": {"median": 5.0, "min": 4.0, "max": 6.0, "n": 3}}
        rec = {"error": None, "file_dir": "/var/tmp", "file_bytes": 256 << 20,
               "commands": {"ringio": "file_bench ...", "fio": "fio ..."},
               "cells": [{"label": "direct qd1", "summary": {"ringio": sm, "fio": sm}, "errors": []}]}
        text = fileio.section(rec)
        self.assertIn("| direct qd1 | 1000 (900\u20131100) | 1000 (900\u20131100) | 5.00 (4.00\u20136.00) |", text)
        self.assertIn("256 MiB in /var/tmp", text)
        self.assertIn("Not run: fio is not installed", fileio.section({"error": "fio is not installed"}))
        self.assertEqual(report.scenario_section({"fileio": rec}, "fileio"), text)
        self.assertIn("Not run.", report.scenario_section({}, "fileio"))

    def test_is_a_scenario_without_client_server_cells(self):
        self.assertIn("fileio", scenarios.ORDER)
        self.assertEqual(scenarios.cells("fileio", False), [])
        a = main.parse_args(["--scenarios", "fileio"])
        self.assertEqual(a.scenarios, ["fileio"])


if __name__ == "__main__":
    unittest.main()
