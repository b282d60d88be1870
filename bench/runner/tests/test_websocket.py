# SPDX-License-Identifier: Apache-2.0
"""The websocket scenarios: grids and what runs in the quick matrix, the servers'
command lines, ws_bench's command and RESULT, httpmem's upgrade, --websocket,
and the target against the best peer."""
import os
import stat
import tempfile
import unittest

from runner import clients, main, memload, plots, report, scenarios, servers, targets
from runner.tests.test_plan import fake_layout

WS_RESULT = ('1 line of text\nRESULT {"tool":"ws_bench","messages":30000,"messages_per_s":30000.0,"seconds":1.0,'
             '"connections":100,"length":32,"failed_connections":0,"bad_handshakes":0,"errors":2,'
             '"connect_s":0.01,"p50_us":600.0,"p90_us":700.0,"p99_us":900.5,"p999_us":1200.0,"max_us":1500.0}\n')


class WebSocketScenarioTest(unittest.TestCase):
    def test_grids(self):
        quick = scenarios.cells("ws-echo", False)
        self.assertEqual([(c["connections"], c["length"]) for c in quick], [(100, 32), (100, 16384)])
        full = scenarios.cells("ws-echo", True)
        self.assertEqual([(c["connections"], c["length"]) for c in full],
                         [(100, 32), (100, 16384), (1000, 32), (1000, 16384)])
        self.assertTrue(all(c["duration"] == scenarios.FULL_SECONDS for c in full))
        idle = scenarios.cells("ws-idle", True)
        self.assertEqual(idle, [{"threads": 1, "load": "ws-idle", "connections": 10000}])
        self.assertTrue(scenarios.measures_memory("ws-idle", idle[0]))
        self.assertFalse(scenarios.counts_syscalls("ws-idle", idle[0]))
        self.assertTrue(scenarios.counts_syscalls("ws-echo", full[0]))
        self.assertEqual(scenarios.label("ws-echo", full[3]), "connections=1000 length=16384")
        self.assertEqual(scenarios.unit_of("ws-echo", full[0]), ("msg/s", "message"))
        self.assertEqual(scenarios.client_of("ws-idle", idle[0]), "httpmem")

    def test_every_scenario_can_be_plotted_and_tabled(self):
        self.assertLessEqual(set(scenarios.SCENARIOS), set(plots.X))
        self.assertEqual(plots.UNIT["ws-echo"], "msg/s")
        self.assertEqual(report.LOADED["ws-idle"], "RSS all idle")

    def test_quick_run_takes_ws_echo_when_named(self):
        quick = main.parse_args([])
        self.assertNotIn("ws-echo", quick.scenarios)  # not in the quick default
        self.assertNotIn("ws-idle", quick.scenarios)
        self.assertEqual(main.parse_args(["--quick", "--scenarios", "ws-echo"]).scenarios, ["ws-echo"])
        self.assertIn("ws-idle", main.parse_args(["--full"]).scenarios)
        self.assertEqual(main.parse_args(["--scenarios", "ws-idle"]).scenarios, ["ws-idle"])

    def test_websocket_option(self):
        a = main.parse_args(["--websocket"])
        self.assertTrue(a.full)
        self.assertEqual(a.scenarios, ["ws-echo", "ws-idle"])
        self.assertEqual(a.servers, ["ringio-uring", "tokio-percore", "beast"])
        a = main.parse_args(["--websocket", "--servers", "beast", "--scenarios", "ws-echo"])
        self.assertEqual((a.servers, a.scenarios), (["beast"], ["ws-echo"]))
        with self.assertRaises(SystemExit):
            main.parse_args(["--websocket", "--quick"])

    def test_who_serves_ws(self):
        for s in ("ringio-uring", "ringio-epoll", "ringio-uring-poll", "tokio-percore", "beast"):
            self.assertTrue(servers.supports(s, "ws"), s)
        for s in ("tokio-mt", "raw-uring", "asio-epoll", "nginx", "uring-exec", "ringio-uring-sqpoll"):
            self.assertFalse(servers.supports(s, "ws"), s)
        for mode in ("echo", "pong", "http", "http-static", "https"):
            self.assertFalse(servers.supports("beast", mode), mode)

    def test_server_command_lines(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["http_server"], peers=["beast_ws_server"])
            tokio = os.path.join(d, "bench/peers/tokio/target/release/tokio_server")
            os.makedirs(os.path.dirname(tokio))
            with open(tokio, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(tokio, os.stat(tokio).st_mode | stat.S_IXUSR)
            cell = scenarios.cells("ws-echo", True)[0]
            ringio = servers.spec(lay, "ringio-uring", "ws", 9000, cell, d)
            self.assertEqual(ringio.argv, [os.path.join(d, "build/bench/apps/http_server"), "--port", "9000",
                                           "--threads", "1", "--backend", "uring"])
            beast = servers.spec(lay, "beast", "ws", 9000, cell, d)
            self.assertEqual(beast.argv, [os.path.join(d, "build/bench/bench/peers/beast_ws_server"), "--mode",
                                          "echo", "--port", "9000", "--threads", "1"])
            tok = servers.spec(lay, "tokio-percore", "ws", 9000, cell, d)
            self.assertEqual(tok.argv, [tokio, "--mode", "ws", "--port", "9000", "--threads", "1",
                                        "--runtime", "per-core"])
            # 10,000 idle websockets: over http_server's default connection limit.
            idle = servers.spec(lay, "ringio-uring", "ws", 9000, scenarios.cells("ws-idle", True)[0], d)
            self.assertEqual(idle.argv[-2:], ["--max-connections", "10064"])
            with self.assertRaisesRegex(servers.Unavailable, "has no ws mode"):
                servers.spec(lay, "nginx", "ws", 9000, cell, d)

    def test_client_command_and_parse(self):
        lay = servers.Layout("/repo")
        cell = scenarios.cells("ws-echo", True)[1]
        argv = clients.command(lay, "ws_bench", cell, 9000)
        self.assertEqual(argv, ["/repo/build/bench/bench/peers/ws_bench", "--port", "9000", "--connections", "100",
                                "--length", "16384", "--duration", "5", "--path", "/ws/echo"])
        m = clients.parse("ws_bench", WS_RESULT)
        self.assertEqual((m["throughput"], m["ops"], m["errors"]), (30000.0, 30000, 2))
        self.assertEqual(m["latency_us"]["p99"], 900.5)
        with self.assertRaises(clients.ParseError):
            clients.parse("ws_bench", 'RESULT {"tool":"ws_bench"}\n')
        with self.assertRaises(clients.ParseError):
            clients.parse("ws_bench", "no result\n")
        idle = clients.command(lay, "httpmem", scenarios.cells("ws-idle", True)[0], 9000, server_pid=7)
        self.assertEqual(idle[1:], ["ws-idle", "--port", "9000", "--pid", "7", "--connections", "10000",
                                    "--path", "/ws/echo"])

    def test_httpmem_upgrade(self):
        # RFC 6455 section 1.3's example key and answer.
        self.assertEqual(memload.websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        req = memload.upgrade_request("/ws/echo", "dGhlIHNhbXBsZSBub25jZQ==").decode()
        self.assertTrue(req.startswith("GET /ws/echo HTTP/1.1\r\n"))
        self.assertIn("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", req)
        self.assertIn("Upgrade: websocket\r\n", req)
        self.assertTrue(req.endswith("\r\n\r\n"))
        ok = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
        c = memload.Conn(None, ws_key="dGhlIHNhbXBsZSBub25jZQ==")
        c.take(ok[:20])
        self.assertFalse(c.complete())
        c.take(ok[20:])
        self.assertTrue(c.complete())
        self.assertEqual(c.status, 101)
        with self.assertRaises(memload.ResponseError):
            memload.Conn(None, ws_key="AAAAAAAAAAAAAAAAAAAAAA==").take(ok)
        refused = memload.Conn(None, ws_key="dGhlIHNhbXBsZSBub25jZQ==")
        refused.take(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        self.assertEqual(refused.status, 400)
        with self.assertRaises(memload.ResponseError):  # a plain GET's response must have a length
            memload.Conn(None).take(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
        self.assertEqual(memload.parse_args(["ws-idle", "--port", "1", "--pid", "2", "--connections", "3",
                                             "--path", "/ws/echo"]).idle_wait, 1.0)


def _group(subject, server_us, label="connections=100 length=32"):
    return {"scenario": "ws-echo", "cell_label": label, "cell": {"threads": 1, "connections": 100, "length": 32},
            "subject": subject, "server_us": {"median": server_us, "min": server_us, "max": server_us}}


class WebSocketTargetTest(unittest.TestCase):
    def rows(self, summary):
        return [r for r in targets.evaluate(summary, [], True) if r["target"].startswith("ws-echo")]

    def test_against_the_cheapest_peer(self):
        rows = self.rows([_group("ringio-uring", 5.0), _group("tokio-percore", 9.0), _group("beast", 6.0)])
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["measured"], "1.200x beast (1 round)")
        self.assertTrue(rows[0]["met"])
        rows = self.rows([_group("ringio-uring", 5.8), _group("tokio-percore", 9.0), _group("beast", 6.0)])
        self.assertFalse(rows[0]["met"])

    def test_not_measured(self):
        rows = self.rows([])
        self.assertEqual(len(rows), 1)
        self.assertIsNone(rows[0]["met"])
        self.assertTrue(rows[0]["measured"].startswith("not measured"))
        rows = self.rows([_group("ringio-uring", 5.0)])
        self.assertIsNone(rows[0]["met"])


if __name__ == "__main__":
    unittest.main()
