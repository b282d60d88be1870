"""The echo-idle, pingpong-cancel and switch scenarios: grids, client command
lines, the echo connection of httpmem and the parsing of switch_bench."""
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
        self.assertFalse(servers.supports("tokio-mt", "https"))
        self.assertFalse(servers.supports("ringio-uring-fibers", "https"))
        conf = servers.nginx_conf("/t", 9443, 1, 20000, 100, tls=("/t/c.pem", "/t/k.pem"))
        self.assertIn("listen 127.0.0.1:9443 reuseport ssl;", conf)
        self.assertIn("ssl_certificate /t/c.pem;", conf)
        self.assertNotIn("ssl", servers.nginx_conf("/t", 9080, 1, 20000, 100))
        with self.assertRaises(servers.Unavailable):
            servers.spec(servers.Layout("/nonexistent"), "nginx", "https", 9443, {}, "/tmp", None, None)


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
