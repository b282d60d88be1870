# SPDX-License-Identifier: Apache-2.0
"""Grids, cell marks, server command lines and the run plan."""
import os
import stat
import tempfile
import unittest

from runner import main, scenarios, servers


class GridTest(unittest.TestCase):
    def test_full_grids_are_the_issue_grids(self):
        ping = scenarios.cells("pingpong", full=True)
        self.assertEqual(len(ping), 20)
        self.assertEqual({c["threads"] for c in ping}, {1, 2, 4, 8})
        self.assertEqual({c["sessions"] for c in ping}, {10, 100, 1000, 10000, 100000})
        self.assertTrue(all(c["blocksize"] == 16384 and c["timeout"] == 10 for c in ping))
        echo = scenarios.cells("echo", full=True)
        self.assertEqual({c["connections"] for c in echo}, {1, 50, 150, 300, 500, 1000})
        self.assertEqual({c["length"] for c in echo}, {128, 512, 1000})
        self.assertEqual([c["concurrency"] for c in scenarios.cells("churn", True)], [100, 500, 1000, 5000, 10000])
        self.assertEqual([c["connections"] for c in scenarios.cells("http-wrk", True)], [100, 1000])
        self.assertEqual(scenarios.cells("http-ab", True), [{"threads": 1, "concurrency": 100, "requests": 100000}])

    def test_quick_is_small(self):
        for name in scenarios.ORDER:
            self.assertLessEqual(len(scenarios.cells(name, full=False)), 2, name)

    def test_seconds_override(self):
        self.assertEqual(scenarios.cells("echo", False, seconds=3)[0]["duration"], 3)
        self.assertEqual(scenarios.cells("pingpong", False, seconds=3)[0]["timeout"], 3)

    def test_labels(self):
        self.assertEqual(scenarios.label("pingpong", {"threads": 1, "sessions": 10, "blocksize": 16384,
                                                      "timeout": 10}), "threads=1 sessions=10")
        self.assertEqual(scenarios.label("churn", {"threads": 1, "concurrency": 100, "sessions": 5000}),
                         "concurrency=100")

    def test_probe_cell_is_shorter(self):
        c = scenarios.probe_cell("echo", {"connections": 50, "duration": 5})
        self.assertEqual((c["connections"], c["duration"]), (50, 2))
        self.assertEqual(scenarios.probe_cell("http-ab", {"concurrency": 100, "requests": 100000})["requests"],
                         25000)
        self.assertEqual(scenarios.probe_cell("churn", {"concurrency": 10000, "sessions": 50000})["sessions"], 20000)
        self.assertEqual(scenarios.probe_cell("http-wrk", {"connections": 100, "duration": 1})["duration"], 1)
        self.assertEqual(scenarios.probe_cell("echo", {"connections": 100, "duration": 1})["duration"], 0.5)


class MarkTest(unittest.TestCase):
    def test_beyond_cores(self):
        why, _ = scenarios.mark("pingpong", {"threads": 4, "sessions": 10}, 2, 20000, 28232)
        self.assertEqual(why, "beyond this machine: 4 threads on 2 cores")

    def test_fd_limit(self):
        why, _ = scenarios.mark("pingpong", {"threads": 1, "sessions": 100000}, 2, 20000, 28232)
        self.assertIn("beyond the descriptor limit", why)

    def test_notes(self):
        why, notes = scenarios.mark("pingpong", {"threads": 2, "sessions": 100000}, 2, 1 << 20, 28232, 1)
        self.assertIsNone(why)
        self.assertEqual(len(notes), 2)
        self.assertIn("share 1 CPU", notes[0])
        self.assertIn("ephemeral ports", notes[1])
        self.assertEqual(scenarios.mark("churn", {"concurrency": 1000, "sessions": 50000}, 2, 20000, 28232),
                         (None, []))


def fake_layout(d, apps=(), peers=()):
    for rel in [f"build/bench/apps/{a}" for a in apps] + [f"build/bench/bench/peers/{p}" for p in peers]:
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
    return servers.Layout(d)


class ServerSpecTest(unittest.TestCase):
    def test_command_lines(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["pong", "echo_server"], peers=["raw_uring_server"])
            cell = {"threads": 1, "sessions": 100, "blocksize": 16384}
            s = servers.spec(lay, "ringio-epoll", "pong", 9000, cell, d)
            self.assertEqual(s.argv[1:], ["9000", "1", "16384", "100", "--backend", "epoll", "--keep-running"])
            s = servers.spec(lay, "ringio-uring-poll", "echo", 9000, {"threads": 2}, d)
            self.assertEqual(s.argv[1:], ["--port", "9000", "--threads", "2", "--backend", "uring-poll"])
            s = servers.spec(lay, "raw-uring", "pong", 9000, cell, d)
            self.assertEqual(s.argv[1:], ["--mode", "pong", "--port", "9000", "--threads", "1", "--block", "16384"])
            with self.assertRaisesRegex(servers.Unavailable, "build/bench/apps/http_server not built"):
                servers.spec(lay, "ringio-uring", "http", 9000, {}, d)
            with self.assertRaisesRegex(servers.Unavailable, "no echo mode"):
                servers.check(lay, "nginx", "echo")

    def test_nginx_conf(self):
        conf = servers.nginx_conf("/tmp/x", 9123, 2, 4096)
        for want in ["worker_processes 2;", "daemon off;", "master_process on;", "pid /tmp/x/nginx.pid;",
                     "access_log off;", "listen 127.0.0.1:9123", 'return 200 "Hello world!";',
                     "default_type text/plain;", "client_body_temp_path /tmp/x/"]:
            self.assertIn(want, conf)
        self.assertNotIn("/var/", conf)


class PlanTest(unittest.TestCase):
    def test_missing_binaries_are_skipped_with_a_note(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["echo_server"], peers=["raw_uring_server"])
            a = main.parse_args(["--servers", "ringio-uring,raw-uring,raw-epoll", "--scenarios", "echo,pingpong"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 20000, 28232)
            reasons = {(s["scenario"], s.get("subject")): s["reason"] for s in skipped}
            self.assertEqual(reasons[("pingpong", None)], "skipped: build/bench/apps/ping not built")
            self.assertEqual(reasons[("echo", None)], "skipped: build/bench/apps/echo_bench not built")
            self.assertEqual(reasons[("echo", "raw-epoll")],
                             "skipped: build/bench/bench/peers/raw_epoll_server not built")
            self.assertTrue(all(c["status"] == "skipped" for p in plan for c in p["cells"]))

    def test_runnable_plan(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["echo_server", "pong", "ping"], peers=["raw_uring_server"])
            a = main.parse_args(["--full", "--servers", "ringio-uring,raw-uring,nginx", "--scenarios", "pingpong"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 1 << 20, 28232)
            p = plan[0]
            self.assertEqual(p["subjects"], ["ringio-uring", "raw-uring"])  # nginx has no pong mode
            marked = [c for c in p["cells"] if c["status"] == "marked"]
            self.assertEqual(len(marked), 10)  # threads 4 and 8 on 2 cores
            self.assertTrue(all("beyond this machine" in c["reason"] for c in marked))
            self.assertTrue(p["client_cmd"].startswith("ping PORT 1 16384 10 10"))
            self.assertGreater(main.estimate(plan, 3, True), 0)

    def test_bad_names(self):
        with self.assertRaises(SystemExit):
            main.parse_args(["--servers", "nope"])
        a = main.parse_args(["--servers", "nginx,ringio-uring", "--scenarios", "http-ab"])
        self.assertEqual(a.servers, ["ringio-uring", "nginx"])


if __name__ == "__main__":
    unittest.main()
