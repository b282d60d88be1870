# SPDX-License-Identifier: Apache-2.0
"""The echo-idle, pingpong-cancel and switch scenarios: grids, client command
lines, the echo connection of httpmem and the parsing of switch_bench."""
import os
import unittest

from runner import clients, main, memload, scenarios, servers, switch


class NewScenarioTest(unittest.TestCase):
    def test_grids(self):
        self.assertEqual(scenarios.cells("echo-idle", True), [{"threads": 1, "load": "echo-idle", "connections": 10000}])
        self.assertTrue(scenarios.measures_memory("echo-idle", scenarios.cells("echo-idle", False)[0]))
        full = scenarios.cells("pingpong-cancel", True)
        self.assertEqual([c["sessions"] for c in full], [10, 100, 1000])
        self.assertEqual(scenarios.cells("switch", True), [])
        self.assertIn("switch", scenarios.ORDER)

    def test_client_subjects(self):
        scen = scenarios.SCENARIOS["pingpong-cancel"]
        self.assertTrue(scen.subjects_are_clients)
        self.assertEqual(main.baseline_of("pingpong-cancel"), "ping")
        self.assertEqual(main.baseline_of("client-cost"), "echo_bench")
        self.assertEqual(main.baseline_of("echo"), servers.BASELINE)
        lay = servers.Layout("/repo")
        cell = scenarios.cells("pingpong-cancel", False)[0]
        plain = clients.command(lay, "ping", cell, 9000)
        self.assertEqual(clients.command(lay, "ping-when-any", cell, 9000), plain + ["--when-any"])
        self.assertEqual(clients.command(lay, "ping-senders", cell, 9000), plain + ["--senders"])
        self.assertEqual(clients.path_of(lay, "ping-senders"), clients.path_of(lay, "ping"))
        out = 'RESULT {"round_trips": 1000, "seconds": 2.0, "gib_per_s": 1.5}\n'
        self.assertEqual(clients.parse("ping-when-any", out)["rate"], 500.0)

    def test_echo_idle_command_and_connection(self):
        lay = servers.Layout("/repo")
        argv = clients.command(lay, "httpmem", scenarios.cells("echo-idle", False)[0], 9000, server_pid=42)
        self.assertEqual(argv[1:], ["echo-idle", "--port", "9000", "--pid", "42", "--connections", "10000"])
        c = memload.Conn(None, echo=True)
        c.take(memload.ECHO_MESSAGE[:5])
        self.assertFalse(c.complete())
        c.take(memload.ECHO_MESSAGE[5:])
        self.assertTrue(c.complete())
        with self.assertRaises(memload.ResponseError):
            memload.Conn(None, echo=True).take(b"HTTP/1.1 400")

    def test_switch_parse_and_section(self):
        out = ('noise\nRESULT {"subject": "task", "ns_per_switch": 4.0, "min_ns": 3.5, "max_ns": 4.5}\n'
               'RESULT {"subject": "fcontext", "ns_per_switch": 2.0, "min_ns": 1.9, "max_ns": 2.2}\n')
        subj = switch.parse(out)
        self.assertEqual(list(subj), ["task", "fcontext"])
        rec = {"command": ["/b/apps/switch_bench", "--switches", "10"], "subjects": subj, "error": None}
        text = switch.section(rec)
        self.assertIn("| task | 4.00 (3.50\u20134.50) | 2.00 |", text)
        self.assertIn("`switch_bench --switches 10`", text)
        self.assertIn("Not run or failed: gone", switch.section(dict(rec, error="gone")))


if __name__ == "__main__":
    unittest.main()


class TlsScenarioTest(unittest.TestCase):
    def test_grids_and_clients(self):
        wrk = scenarios.cells("https-wrk", True)
        self.assertEqual([c["connections"] for c in wrk], [100, 1000])
        lay = servers.Layout("/repo")
        self.assertTrue(clients.command(lay, "wrk", wrk[0], 9000)[-1].startswith("https://127.0.0.1:9000/"))
        ab = clients.command(lay, "ab", scenarios.cells("tls-handshake", False)[0], 9000)
        self.assertEqual(ab[-1], "https://127.0.0.1:9000/")
        idle = scenarios.cells("tls-idle", True)[0]
        self.assertTrue(scenarios.measures_memory("tls-idle", idle))
        self.assertEqual(clients.command(lay, "httpmem", idle, 9000, server_pid=1)[1], "tls-idle")
        # plain http keeps its scheme
        self.assertTrue(clients.command(lay, "wrk", scenarios.cells("http-wrk", False)[0], 9000)[-1]
                        .startswith("http://"))

    def test_servers(self):
        self.assertTrue(servers.supports("nginx", "https"))
        self.assertTrue(servers.supports("ringio-epoll", "https"))
        self.assertTrue(servers.supports("tokio-mt", "https"))
        self.assertTrue(servers.supports("tokio-percore", "https"))
        self.assertFalse(servers.supports("raw-uring", "https"))
        self.assertFalse(servers.supports("ringio-uring-fibers", "https"))
        conf = servers.nginx_conf("/t", 9443, 1, 20000, 100, tls=("/t/c.pem", "/t/k.pem"))
        self.assertIn("listen 127.0.0.1:9443 reuseport ssl;", conf)
        self.assertIn("ssl_certificate /t/c.pem;", conf)
        self.assertNotIn("ssl", servers.nginx_conf("/t", 9080, 1, 20000, 100))
        with self.assertRaises(servers.Unavailable):
            servers.spec(servers.Layout("/nonexistent"), "nginx", "https", 9443, {}, "/tmp", None, None)

    def test_tokio_serves_https_with_rustls(self):
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            lay = servers.Layout(d)
            path = lay.peer("tokio_server")
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(path, 0o755)
            spec = servers.spec(lay, "tokio-percore", "https", 9443, {"threads": 1}, d, None, ("/c.pem", "/k.pem"))
            self.assertEqual(spec.argv[1:], ["--mode", "http", "--port", "9443", "--threads", "1",
                                             "--tls-cert", "/c.pem", "--tls-key", "/k.pem", "--runtime", "per-core"])


class SwitchPlanTest(unittest.TestCase):
    def test_the_plan_entry_of_switch_has_no_runs(self):
        import tempfile
        from .test_plan import fake_layout
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["switch_bench"], peers=[])
            a = main.parse_args(["--scenarios", "switch", "--servers", "ringio-uring"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], switch.SUBJECTS)
            self.assertEqual(skipped, [])
            runs = []
            main.run_plan(a, None, plan, runs, skipped)  # nothing to run, no server context needed
            self.assertEqual(runs, [])


class UringExecScenarioTest(unittest.TestCase):
    """The seed executor's pong and ping (bench/peers/uring_exec/build.sh)."""

    OUT = ("done.\nread: 1.887 GiB\nwrite: 1.887 GiB\nthroughput (read): 965.914 MiB/s\n"
           "throughput (write): 965.914 MiB/s\n")

    def test_grid_and_commands(self):
        full = scenarios.cells("pingpong-seed", True)
        self.assertEqual([c["sessions"] for c in full], [10, 100, 1000])
        self.assertEqual({c["timeout"] for c in full}, {10})
        lay = servers.Layout("/repo")
        cell = full[1]
        argv = clients.command(lay, clients.URING_EXEC_PING, cell, 9000)
        self.assertEqual(argv, ["/repo/build/bench/bench/peers/uring_exec_ping", "9000", "1", "16384", "100", "10"])
        self.assertTrue(servers.supports(servers.URING_EXEC, "pong"))
        self.assertFalse(servers.supports(servers.URING_EXEC, "echo"))
        self.assertIn(servers.URING_EXEC, servers.ORDER)

    def test_parse(self):
        m = clients.parse(clients.URING_EXEC_PING, self.OUT, 16384)
        self.assertAlmostEqual(m["throughput"], 965.914 / 1024)
        self.assertAlmostEqual(m["ops"], 1.887 * (1 << 30) / 16384)
        self.assertAlmostEqual(m["rate"], 965.914 * (1 << 20) / 16384)
        with self.assertRaises(clients.ParseError):
            clients.parse(clients.URING_EXEC_PING, "done.\n", 16384)
        with self.assertRaises(clients.ParseError):
            clients.parse(clients.URING_EXEC_PING, "read: 2 XB\nthroughput (read): 1 XB/s\n", 16384)

    def test_unbuilt_peer_says_how_to_build_it(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            lay = servers.Layout(d)
            with self.assertRaises(servers.Unavailable) as e:
                servers.check(lay, servers.URING_EXEC, "pong")
            self.assertIn("bench/peers/uring_exec/build.sh", str(e.exception))
            self.assertIn("build.sh", clients.available(lay, clients.URING_EXEC_PING))

    def test_server_spec_takes_more_sessions_than_a_run_opens(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            lay = servers.Layout(d)
            path = lay.peer("uring_exec_pong")
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(path, 0o755)
            spec = servers.spec(lay, servers.URING_EXEC, "pong", 9000, scenarios.cells("pingpong-seed", True)[2], d)
            self.assertEqual(spec.argv[1:4], ["9000", "1", "16384"])
            self.assertGreater(int(spec.argv[4]), 1000 + servers.HEADROOM)
            self.assertFalse(spec.ready_line)
            self.assertTrue(spec.kill_only)  # it blocks SIGTERM
