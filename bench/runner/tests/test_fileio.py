# SPDX-License-Identifier: Apache-2.0
"""The fileio scenario: its grid, commands, output parsers, summaries, ratios and report section."""
import json
import os
import tempfile
import unittest

from runner import fileio, main, report, scenarios

FIO_JSON = """note: both iodepth >= 1 and synchronous I/O engine are selected\n""" + json.dumps(
    {"jobs": [{"jobname": "randread", "job_runtime": 2000, "usr_cpu": 1.2, "sys_cpu": 21.7,
               "read": {"iops": 28080.9, "total_ios": 56190}, "write": {"iops": 0, "total_ios": 0}}]})
FIO_WRITE_JSON = json.dumps({"jobs": [{"job_runtime": 500, "read": {"total_ios": 0},
                                       "write": {"total_ios": 720}, "sync": {"total_ios": 45}}]})
RINGIO_OUT = ('RESULT {"subject": "ringio", "backend": "uring", "depth": 32, "block": 4096, "direct": true, '
              '"fixed": false, "reads": 53024, "seconds": 2.042814, "iops": 25956.4, "errors": 0}\n')
RINGIO_WRITE_OUT = ('RESULT {"subject": "ringio", "backend": "uring", "rw": "write", "depth": 1, "block": 1048576, '
                    '"ops": 720, "reads": 0, "fsyncs": 45, "seconds": 0.5, "iops": 1440.0, "errors": 0}\n')
MOUNTS = ("/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\ntmpfs /run tmpfs rw 0 0\n"
          "/dev/vdb /work/build ext4 rw 0 0\n")


class FakeLayout:
    root = "/r"
    build = "build/bench"

    def app(self, name):
        return "/r/build/apps/" + name


class FileIo(unittest.TestCase):
    def test_quick_grid_covers_both_filesystems_reads_writes_and_fsync(self):
        cs = fileio.cells(False)
        self.assertEqual(len(cs), 20)
        self.assertEqual({c["fs"] for c in cs}, {"tmpfs", "disk"})
        reads = [(c["fs"], c["direct"], c["depth"]) for c in cs if c["rw"] == "randread"]
        self.assertEqual(len(reads), 12)
        self.assertEqual(sorted({d for _, _, d in reads}), [1, 32, 128])
        writes = [c for c in cs if c["rw"] == "randwrite"]
        self.assertEqual({(c["depth"], c["block"]) for c in writes}, {(32, 4096)})
        seq = [c for c in cs if c["rw"] == "write"]
        self.assertEqual(len(seq), 4)
        self.assertTrue(all(c["block"] == 1 << 20 and c["fsync"] == 16 and c["depth"] == 1 for c in seq))
        self.assertTrue(all(c["seconds"] == fileio.QUICK_SECONDS for c in cs))
        full = fileio.cells(True)
        self.assertEqual(len([c for c in full if c["rw"] == "randwrite"]), 12)
        self.assertTrue(all(c["seconds"] == 5 for c in full))
        self.assertTrue(all(c["seconds"] == 2 for c in fileio.cells(False, 2)))

    def test_a_quick_round_is_short(self):
        t = fileio.round_seconds(fileio.cells(False), fileio.subjects(["uring"]))
        self.assertEqual(t, 98 * 0.8)  # 98 runs of 0.5 s: three rounds take about 4 minutes
        self.assertLess(3 * t, 300)

    def test_labels(self):
        self.assertEqual(fileio.label({"fs": "tmpfs", "rw": "randread", "direct": 1, "depth": 32, "block": 4096}),
                         "tmpfs direct randread 4k qd32")
        self.assertEqual(fileio.label({"fs": "disk", "rw": "write", "direct": 0, "depth": 1, "block": 1 << 20,
                                       "fsync": 16}), "disk buffered write 1M fsync/16 qd1")
        self.assertEqual(fileio.label({"direct": 1, "depth": 1}), "direct randread 4k qd1")  # older records

    def test_subjects_and_where_they_apply(self):
        self.assertEqual(fileio.subjects(["uring"]),
                         ["fio-uring", "fio-psync", "ringio-uring", "ringio-uring-fixed", "tokio", "tokio-fs"])
        self.assertEqual(fileio.subjects(["uring", "epoll"])[2:5], ["ringio-uring", "ringio-uring-fixed", "ringio-epoll"])
        qd32 = {"depth": 32, "direct": 1}
        self.assertIn("synchronous", fileio.applies("fio-psync", qd32))
        self.assertIsNone(fileio.applies("fio-psync", dict(qd32, depth=1)))
        self.assertIn("O_DIRECT", fileio.applies("tokio-fs", qd32))
        self.assertIsNone(fileio.applies("tokio-fs", dict(qd32, direct=0)))
        self.assertIsNone(fileio.applies("tokio", qd32))

    def test_commands_have_the_same_parameters(self):
        cell = {"fs": "disk", "rw": "randread", "direct": 1, "depth": 128, "block": 4096, "fsync": 0, "seconds": 0.5}
        r = fileio.command(FakeLayout(), "ringio-uring", "/f", cell)
        self.assertEqual(r[0], "/r/build/apps/file_bench")
        self.assertIn("--direct", r)
        self.assertNotIn("--fixed", r)
        self.assertNotIn("--fsync", r)
        self.assertEqual(r[r.index("--depth") + 1], "128")
        self.assertEqual(r[r.index("--backend") + 1], "uring")
        self.assertEqual(r[r.index("--rw") + 1], "randread")
        fx = fileio.command(FakeLayout(), "ringio-uring-fixed", "/f", cell)
        self.assertIn("--fixed", fx)
        self.assertEqual(fx[fx.index("--backend") + 1], "uring")
        ep = fileio.command(FakeLayout(), "ringio-uring-poll", "/f", cell)
        self.assertEqual(ep[ep.index("--backend") + 1], "uring-poll")
        f = fileio.command(FakeLayout(), "fio-uring", "/f", cell)
        for arg in ("--ioengine=io_uring", "--iodepth=128", "--direct=1", "--bs=4096", "--runtime=500ms",
                    "--rw=randread", "--invalidate=0"):
            self.assertIn(arg, f)
        p = fileio.command(FakeLayout(), "fio-psync", "/f", cell)
        self.assertIn("--ioengine=psync", p)
        self.assertIn("--iodepth=1", p)
        t = fileio.command(FakeLayout(), "tokio", "/f", cell)
        self.assertEqual(t[0], "/r/bench/peers/tokio/target/release/tokio_file_bench")
        self.assertEqual(t[t.index("--api") + 1], "blocking")
        self.assertIn("--direct", t)
        tf = fileio.command(FakeLayout(), "tokio-fs", "/f", dict(cell, direct=0))
        self.assertEqual(tf[tf.index("--api") + 1], "fs")
        self.assertNotIn("--direct", tf)
        seq = dict(cell, rw="write", depth=1, block=1 << 20, fsync=16, direct=0)
        self.assertIn("--fsync=16", fileio.command(FakeLayout(), "fio-uring", "/f", seq))
        self.assertIn("--bs=1048576", fileio.command(FakeLayout(), "fio-psync", "/f", seq))
        rs = fileio.command(FakeLayout(), "ringio-uring", "/f", seq)
        self.assertEqual(rs[rs.index("--fsync") + 1], "16")
        self.assertEqual(rs[rs.index("--block") + 1], "1048576")
        ts = fileio.command(FakeLayout(), "tokio", "/f", seq)
        self.assertEqual(ts[ts.index("--fsync") + 1], "16")

    def test_example_commands_use_a_cell_each_subject_runs_in(self):
        c = fileio.example_commands(FakeLayout(), fileio.subjects(["uring"]), False)
        self.assertIn("--iodepth=32 --direct=1", c["fio-uring"])
        self.assertIn("--iodepth=1 --direct=1", c["fio-psync"])
        self.assertTrue(c["ringio-uring-fixed"].startswith("file_bench --file FILE"))
        self.assertIn("--depth 32", c["tokio-fs"])
        self.assertNotIn("--direct", c["tokio-fs"])

    def test_parsers(self):
        self.assertEqual(fileio.parse_ringio(RINGIO_OUT), (53024, 2.042814))
        self.assertEqual(fileio.parse_ringio(RINGIO_WRITE_OUT), (720, 0.5))
        self.assertIsNone(fileio.parse_ringio("nothing\n"))
        self.assertEqual(fileio.parse_fio(FIO_JSON), (56190, 2.0))
        self.assertEqual(fileio.parse_fio(FIO_WRITE_JSON), (720, 0.5))  # fsyncs are not operations
        self.assertIsNone(fileio.parse_fio("fio: error\n"))

    def test_filesystems_are_found_in_the_mount_table(self):
        self.assertEqual(fileio.fs_type("/work/build/x", MOUNTS), "ext4")
        self.assertEqual(fileio.fs_type("/dev/shm", MOUNTS), "tmpfs")
        self.assertEqual(fileio.fs_type("/var/tmp", MOUNTS), "ext4")
        self.assertIn(fileio.tmpfs_dir(MOUNTS), ("/dev/shm", "/run", None))
        self.assertIsNone(fileio.tmpfs_dir("/dev/vda / ext4 rw 0 0\n"))
        self.assertEqual(fileio.disk_dir(FakeLayout()), "/r/build/bench/fileio")

    def test_direct_support_is_probed_on_a_real_file(self):
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(os.path.abspath(__file__))) as f:
            f.write(b"x" * 8192)
            f.flush()
            why = fileio.direct_support(f.name)
            self.assertTrue(why is None or "O_DIRECT" in why)
        self.assertIn("O_DIRECT", fileio.direct_support("/nonexistent/ringio-fileio"))

    def test_summary_takes_medians_and_spread_and_ratios(self):
        s = fileio.summarize([{"iops": 10, "mb_s": 1, "cpu_us_per_io": 3}, {"iops": 30, "mb_s": 3, "cpu_us_per_io": 1},
                              {"iops": 20, "mb_s": 2, "cpu_us_per_io": 2}])
        self.assertEqual(s["iops"], {"median": 20, "min": 10, "max": 30, "n": 3})
        self.assertEqual(s["mb_s"]["median"], 2)
        self.assertEqual(s["cpu_us_per_io"]["median"], 2)
        self.assertEqual(fileio.summarize([{"iops": 1, "cpu_us_per_io": 1}, {"iops": 3, "cpu_us_per_io": 1}])
                         ["iops"]["median"], 2)
        self.assertIsNone(fileio.summarize([])["iops"])
        base = fileio.summarize([{"iops": 10, "mb_s": 1, "cpu_us_per_io": 4}])
        r = fileio.ratios({"fio-uring": base, "ringio-uring": s})
        self.assertEqual(r["ringio-uring"], {"iops": 2.0, "cpu_us_per_io": 0.5})
        self.assertEqual(r["fio-uring"], {"iops": 1.0, "cpu_us_per_io": 1.0})
        self.assertEqual(fileio.ratios({"ringio-uring": s})["ringio-uring"], {"iops": None, "cpu_us_per_io": None})

    def test_section_lists_subjects_ratios_and_cells_not_run(self):
        def sm(iops, cpu):
            return {"iops": {"median": iops, "min": iops - 100, "max": iops + 100, "n": 3},
                    "mb_s": {"median": iops * 4096 / 1e6, "min": 1.0, "max": 9.0, "n": 3},
                    "cpu_us_per_io": {"median": cpu, "min": cpu - 1, "max": cpu + 1, "n": 3}}
        summary = {"fio-uring": sm(1000.0, 5.0), "ringio-uring": sm(2000.0, 2.5)}
        rec = {"error": None, "subjects": fileio.subjects(["uring"]), "baseline": "fio-uring",
               "files": {"tmpfs": {"dir": "/dev/shm", "type": "tmpfs", "bytes": 64 << 20, "direct": None},
                         "disk": {"dir": "/r/build/bench/fileio", "type": "ext4", "bytes": 64 << 20,
                                  "direct": "open with O_DIRECT: Invalid argument"}},
               "missing": {"tokio": "tokio_file_bench not built"},
               "commands": {"fio-uring": "fio ...", "ringio-uring": "file_bench ..."},
               "cells": [{"label": "tmpfs direct randread 4k qd1", "summary": summary,
                          "ratios": fileio.ratios(summary), "errors": [], "not_run": {}},
                         {"label": "disk direct randread 4k qd1", "summary": {}, "errors": [],
                          "not_run": {"all": "O_DIRECT not supported on ext4: x"}}]}
        text = fileio.section(rec)
        self.assertIn("| tmpfs direct randread 4k qd1 | fio-uring | 1000 (900\u20131100) | 4.1 (1.0\u20139.0) | "
                      "5.00 (4.00\u20136.00) | 1.00x | 1.00x |", text)
        self.assertIn("|  | ringio-uring | 2000 (1900\u20132100) | 8.2 (1.0\u20139.0) | 2.50 (1.50\u20133.50) | "
                      "2.00x | 0.50x |", text)
        self.assertIn("| disk direct randread 4k qd1 | - | not run: O_DIRECT not supported on ext4: x |", text)
        self.assertIn("a 64 MiB file in /dev/shm (tmpfs); O_DIRECT supported", text)
        self.assertIn("O_DIRECT not supported (open with O_DIRECT: Invalid argument)", text)
        self.assertIn("tokio: skipped: tokio_file_bench not built", text)
        self.assertIn("Not run: fio is not installed", fileio.section({"error": "fio is not installed"}))
        self.assertEqual(report.scenario_section({"fileio": rec}, "fileio"), text)
        self.assertIn("Not run.", report.scenario_section({}, "fileio"))

    def test_section_still_renders_older_records(self):
        sm = {"iops": {"median": 1000.0, "min": 900.0, "max": 1100.0, "n": 3},
              "cpu_us_per_io": {"median": 5.0, "min": 4.0, "max": 6.0, "n": 3}}
        rec = {"error": None, "file_dir": "/var/tmp", "file_bytes": 256 << 20,
               "commands": {"ringio": "file_bench ...", "fio": "fio ..."},
               "cells": [{"label": "direct qd1", "summary": {"ringio": sm, "fio": sm}, "errors": []}]}
        text = fileio.section(rec)
        self.assertIn("| direct qd1 | ringio | 1000 (900\u20131100) | - | 5.00 (4.00\u20136.00) | 1.00x | 1.00x |",
                      text)
        self.assertIn("256 MiB in /var/tmp", text)

    def test_is_a_scenario_without_client_server_cells(self):
        self.assertIn("fileio", scenarios.ORDER)
        self.assertEqual(scenarios.cells("fileio", False), [])
        a = main.parse_args(["--scenarios", "fileio"])
        self.assertEqual(a.scenarios, ["fileio"])
        self.assertEqual(a.fileio_backends, ["uring"])
        self.assertEqual(main.parse_args(["--fileio-backends", "epoll,uring"]).fileio_backends, ["uring", "epoll"])
        with self.assertRaises(SystemExit):
            main.parse_args(["--fileio-backends", "kqueue"])

    def test_where_filters_cells(self):
        self.assertTrue(fileio.matches({"fs": "tmpfs", "depth": 1}, {"fs": {"tmpfs"}}))
        self.assertFalse(fileio.matches({"fs": "disk", "depth": 1}, {"fs": {"tmpfs"}}))
        self.assertTrue(fileio.matches({"fs": "disk"}, {"connections": {"5"}}))  # another scenario's key
        self.assertTrue(fileio.matches({"fs": "disk"}, None))


if __name__ == "__main__":
    unittest.main()
