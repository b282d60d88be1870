# SPDX-License-Identifier: Apache-2.0
"""The memory and static-file scenarios: grids, server command lines, httpmem's
parsing and its figures, the summary and report of RSS readings, and httpmem
itself against a small stand-in HTTP server."""
import os
import socket
import sys
import tempfile
import threading
import time
import unittest

from runner import clients, execute, main, memload, procs, report, scenarios, servers, stats

from .test_plan import fake_layout

BASE = lambda scenario: "ringio-uring"  # noqa: E731
BENCH = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STATUS = """\
Name:\tnginx
VmPeak:\t   20000 kB
VmHWM:\t   15000 kB
VmRSS:\t   14780 kB
RssAnon:\t    1000 kB
"""


class GridTest(unittest.TestCase):
    def test_idle(self):
        for full in (False, True):
            self.assertEqual(scenarios.cells("http-idle", full), [{"threads": 1, "load": "idle", "connections": 10000}])
        self.assertEqual(scenarios.label("http-idle", scenarios.cells("http-idle", True)[0]), "connections=10000")

    def test_static(self):
        full = scenarios.cells("http-static", True, seconds=2)
        self.assertEqual([c["load"] for c in full], ["wrk", "download", "slow"])
        self.assertEqual([c["file"] for c in full], ["4KiB", "256MiB", "1MiB"])
        self.assertEqual(full[0]["duration"], 2)
        self.assertEqual(full[2]["connections"], 2000)
        quick = scenarios.cells("http-static", False)
        self.assertEqual(quick, [full[2]])  # the slow readers only
        self.assertEqual(scenarios.label("http-static", full[1]), "load=download file=256MiB connections=1")

    def test_clients_units_and_syscall_runs(self):
        wrk, dl, slow = scenarios.cells("http-static", True)
        idle = scenarios.cells("http-idle", True)[0]
        self.assertEqual([scenarios.client_of("http-static", c) for c in (wrk, dl, slow)],
                         ["wrk", "httpmem", "httpmem"])
        self.assertEqual(scenarios.client_of("http-wrk", {"connections": 100}), "wrk")
        self.assertEqual(scenarios.unit_of("http-static", dl), ("GB/s", "MB"))
        self.assertEqual(scenarios.unit_of("http-static", wrk), ("req/s", "request"))
        self.assertEqual(scenarios.unit_of("echo", {"connections": 1}), ("req/s", "request"))
        self.assertEqual([scenarios.measures_memory("x", c) for c in (wrk, dl, slow, idle)], [False, False, True, True])
        self.assertFalse(scenarios.counts_syscalls("http-idle", idle))
        self.assertTrue(scenarios.counts_syscalls("http-static", dl))
        self.assertEqual(scenarios.probe_cell("http-static", dict(wrk, duration=5))["duration"], 1)  # wrk: whole s
        self.assertEqual(scenarios.probe_cell("http-static", dict(dl, duration=5))["duration"], 2)

    def test_marks_and_time(self):
        idle = scenarios.cells("http-idle", False)[0]
        self.assertEqual(scenarios.mark("http-idle", idle, 2, 20000, 28232), (None, []))
        why, _ = scenarios.mark("http-idle", idle, 2, 8192, 28232)
        self.assertIn("10000 connections need 10064 fds", why)
        self.assertAlmostEqual(scenarios.expected_seconds("http-idle", idle), 0.3 + 1 + 1 + 3)
        slow = scenarios.cells("http-static", False)[0]
        self.assertAlmostEqual(scenarios.expected_seconds("http-static", slow), 0.3 + 0.2 + 3.5 + 3)
        self.assertGreater(scenarios.time_limit("http-idle", idle), 60 + 10)


class ServerTest(unittest.TestCase):
    def test_ringio_arguments(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["http_server"])
            s = servers.spec(lay, "ringio-uring", "http", 9000, {"threads": 1, "connections": 10000}, d)
            self.assertEqual(s.argv[-2:], ["--max-connections", "10064"])  # the default 10000 would refuse some
            s = servers.spec(lay, "ringio-epoll", "http", 9000, {"threads": 1, "connections": 1000}, d)
            self.assertEqual(s.argv[1:], ["--port", "9000", "--threads", "1", "--backend", "epoll"])
            s = servers.spec(lay, "ringio-uring-sqpoll", "http-static", 9000, {"threads": 1}, d, "/srv")
            self.assertEqual(s.argv[-3:], ["--sqpoll", "--root", "/srv"])
            with self.assertRaisesRegex(servers.Unavailable, "no static root"):
                servers.spec(lay, "ringio-uring", "http-static", 9000, {"threads": 1}, d)

    def test_receive_buffer_variants(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["echo_server", "pong"])
            s = servers.spec(lay, "ringio-uring-bundle", "echo", 9000, {"threads": 1, "connections": 50}, d)
            self.assertEqual(s.argv[1:], ["--port", "9000", "--threads", "1", "--backend", "uring",
                                          "--recv-bundle", "on"])
            s = servers.spec(lay, "ringio-uring-nobundle", "pong", 9000,
                             {"threads": 1, "blocksize": 4096, "sessions": 10}, d)
            self.assertEqual(s.argv[-2:], ["--recv-bundle", "off"])
            self.assertIn("--keep-running", s.argv)
            s = servers.spec(lay, "ringio-uring-pbufinc", "echo", 9000, {"threads": 1, "connections": 50}, d)
            self.assertEqual(s.argv[-2:], ["--pbuf-inc", "on"])
            for name in ("ringio-uring-bundle", "ringio-uring-nobundle", "ringio-uring-pbufinc",
                         "ringio-uring-bundle-pbufinc"):
                self.assertTrue(servers.supports(name, "echo"))
                self.assertTrue(servers.supports(name, "pong"))
                self.assertFalse(servers.supports(name, "http"))
                self.assertNotIn(name, servers.ORDER)  # run only when named

    def test_peers_have_no_static_files(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, peers=["raw_uring_server"])
            self.assertTrue(servers.supports("raw-uring", "http-static"))  # listed, to say why it is skipped
            with self.assertRaisesRegex(servers.Unavailable, "raw-uring serves no files"):
                servers.check(lay, "raw-uring", "http-static")
            self.assertFalse(servers.supports("ringio-uring-single-recv", "http-static"))

    def test_nginx_static_conf(self):
        conf = servers.nginx_conf("/tmp/x", 9123, 1, 20000, 10064, "/srv/files")
        self.assertIn("root /srv/files;", conf)
        self.assertIn("sendfile on;", conf)
        self.assertNotIn("Hello world", conf)
        self.assertIn("worker_connections 10064;", conf)
        self.assertIn("worker_connections 10000;", servers.nginx_conf("/tmp/x", 9123, 1, 20000, 164))
        # never beyond what the open-files limit leaves
        self.assertIn("worker_connections 19936;", servers.nginx_conf("/tmp/x", 9123, 1, 20000, 50000))

    def test_plan_lists_the_peers_as_skipped(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=["http_server"], peers=["raw_epoll_server"])
            os.makedirs(os.path.join(d, "bench/clients"))
            os.symlink(os.path.join(BENCH, "clients", "httpmem"), os.path.join(d, "bench/clients/httpmem"))
            a = main.parse_args(["--full", "--servers", "ringio-uring,raw-epoll", "--scenarios", "http-static"])
            plan, skipped = main.make_plan(a, lay, 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], ["ringio-uring"])
            # (where wrk is not installed its cell is listed too, without a subject)
            peers = [s for s in skipped if "subject" in s]
            self.assertEqual([s["subject"] for s in peers], ["raw-epoll"])
            self.assertIn("serves no files", peers[0]["reason"])
            cmd = plan[0]["client_cmd"]
            self.assertIn("wrk -t1 -c100 -d5s --latency http://127.0.0.1:PORT/4KiB.bin", cmd)
            self.assertIn("httpmem download --port PORT --path /256MiB.bin --duration 5", cmd)
            self.assertIn("httpmem slow --port PORT --pid PID --connections 2000 --path /1MiB.bin --seconds 3", cmd)
            # wrk's cell runs where wrk is installed; httpmem's always
            self.assertEqual([c["status"] for c in plan[0]["cells"][1:]], ["run", "run"])

    def test_static_root(self):
        small = {"4KiB": ("4KiB.bin", 4096), "1MiB": ("1MiB.bin", 70000)}
        saved = scenarios.STATIC_FILES
        scenarios.STATIC_FILES = small
        try:
            root = execute.make_static_root()
        finally:
            scenarios.STATIC_FILES = saved
        try:
            self.assertTrue(os.path.basename(root).startswith(procs.tmp_prefix()))
            self.assertEqual(os.stat(root).st_mode & 0o777, 0o755)
            for name, size in small.values():
                st = os.stat(os.path.join(root, name))
                self.assertEqual(st.st_size, size)
                self.assertGreaterEqual(st.st_blocks * 512, size)  # not sparse
                self.assertEqual(st.st_mode & 0o777, 0o644)
            with open(os.path.join(root, "1MiB.bin"), "rb") as f:
                self.assertEqual(f.read(300)[255:258], b"\xff\x00\x01")
        finally:
            import shutil
            shutil.rmtree(root)


def idle_result(**kw):
    res = {"load": "idle", "connections": 10000, "ok": 10000, "failed": 0, "failures": {}, "open_s": 0.9,
           "rss_kib": {"before": 6000, "loaded": 170000, "peak": 171000, "after_1s": 140000, "after_3s": 120000}}
    res.update(kw)
    return res


class ParseTest(unittest.TestCase):
    def test_vmrss(self):
        self.assertEqual(memload.parse_vmrss(STATUS), 14780)
        self.assertIsNone(memload.parse_vmrss("Name:\tzombie\nState:\tZ\n"))
        self.assertGreater(memload.rss_kib([os.getpid()]), 1000)
        self.assertEqual(memload.rss_kib([]), 0)

    def test_head(self):
        self.assertIsNone(memload.parse_head(bytearray(b"HTTP/1.1 200 OK\r\nContent-Le")))
        head = b"HTTP/1.1 200 OK\r\ncontent-length:  12\r\nContent-Type: text/plain\r\n\r\n"
        self.assertEqual(memload.parse_head(bytearray(head + b"Hello")), (200, len(head), 12))
        self.assertEqual(memload.parse_head(b"HTTP/1.0 503 Busy\r\nContent-Length: 0\r\n\r\n")[0], 503)
        for bad in (b"SSH-2.0-x\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                    b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 4000):
            with self.assertRaises(memload.ResponseError):
                memload.parse_head(bytearray(bad))

    def test_conn_counts_a_split_response(self):
        c = memload.Conn(None)
        c.take(b"HTTP/1.1 200 OK\r\nContent-")
        self.assertIsNone(c.need)
        c.take(b"Length: 10\r\n\r\n01234")
        self.assertEqual((c.status, c.need, c.complete()), (200, 39 + 10, False))
        c.take(b"56789")
        self.assertTrue(c.complete())
        self.assertEqual(c.buf, bytearray())  # the body is counted, not kept

    def test_memory_figures(self):
        m = clients.memory_figures(idle_result())
        self.assertEqual(m["per_conn_kib"], (170000 - 6000) / 10000)
        self.assertEqual((m["after1_kib"], m["after_kib"]), (140000, 120000))
        self.assertEqual(m["after_ratio"], 20.0)
        # per connection that was open; the last reading is the latest, not the last in text order
        m = clients.memory_figures(idle_result(ok=8200, failed=1800, rss_kib={
            "before": 1000, "loaded": 83000, "after_10s": 900, "after_3s": 5000}))
        self.assertEqual(m["per_conn_kib"], 10.0)
        self.assertEqual((m["after1_kib"], m["after_kib"]), (5000, 900))
        self.assertIsNone(clients.memory_figures(idle_result(ok=0))["per_conn_kib"])

    def test_parse_httpmem(self):
        m = clients.parse("httpmem", "RESULT " + __import__("json").dumps(idle_result(failed=3)) + "\n")
        self.assertEqual((m["ops"], m["errors"], m["throughput"]), (10000, 3, None))
        self.assertAlmostEqual(m["memory"]["per_conn_kib"], 16.4)
        dl = ('RESULT {"load": "download", "bytes": 3000000000, "downloads": 11, "errors": 0, "seconds": 2.0, '
              '"gb_per_s": 1.5}')
        m = clients.parse("httpmem", dl)
        self.assertEqual((m["throughput"], m["ops"], m["rate"]), (1.5, 3000.0, 5.5))
        with self.assertRaises(clients.ParseError):
            clients.parse("httpmem", 'RESULT {"load": "idle", "connections": 5}')

    def test_commands(self):
        lay = servers.Layout("/repo")
        idle, = scenarios.cells("http-idle", False)
        self.assertEqual(clients.command(lay, "httpmem", idle, 9000, server_pid=42),
                         ["/repo/bench/clients/httpmem", "idle", "--port", "9000", "--pid", "42",
                          "--connections", "10000"])
        wrk, dl, slow = scenarios.cells("http-static", True, seconds=1)
        self.assertEqual(clients.command(lay, "wrk", wrk, 9000)[-1], "http://127.0.0.1:9000/4KiB.bin")
        self.assertEqual(clients.command(lay, "httpmem", dl, 9000)[1:],
                         ["download", "--port", "9000", "--path", "/256MiB.bin", "--duration", "1"])
        self.assertEqual(clients.command(lay, "httpmem", slow, 9000, 7)[-4:], ["--path", "/1MiB.bin", "--seconds", "3"])
        self.assertIsNone(clients.available(servers.Layout(os.path.dirname(BENCH)), "httpmem"))


def mem_run(subject, before, loaded, after, repeat=1, label="connections=10000", ok=10000, failed=0):
    res = idle_result(ok=ok, failed=failed, rss_kib={"before": before, "loaded": loaded, "after_1s": after,
                                                     "after_3s": after})
    m = clients.parse_httpmem(res)
    return {"scenario": "http-idle", "cell_label": label, "cell": {"threads": 1, "load": "idle", "connections": 10000},
            "subject": subject, "server": subject, "client": "httpmem", "repeat": repeat, "kind": "measure",
            "ok": True, "error": None, "wall_s": 5.0, "server_cpu": {"user_s": 0.1, "sys_s": 0.4},
            "metrics": m, "per_op": {"server_us": 50.0, "server_user_us": 10.0, "server_sys_us": 40.0}}


class SummaryTest(unittest.TestCase):
    def setUp(self):
        self.runs = [mem_run("ringio-uring", 6000, 170000, 140000, 1), mem_run("nginx", 15000, 20000, 15500, 1),
                     mem_run("ringio-uring", 6000, 180000, 150000, 2), mem_run("nginx", 15000, 21000, 15500, 2),
                     mem_run("ringio-uring", 6000, 160000, 130000, 3), mem_run("nginx", 15000, 19000, 15500, 3,
                                                                             failed=7)]

    def test_spreads_and_ratios(self):
        s = stats.summarize(self.runs, BASE)
        me = stats.find(s, "http-idle", "connections=10000", "ringio-uring")
        ng = stats.find(s, "http-idle", "connections=10000", "nginx")
        self.assertEqual(me["memory"]["per_conn_kib"], {"median": 16.4, "min": 15.4, "max": 17.4, "n": 3})
        self.assertEqual(ng["memory"]["loaded_kib"]["median"], 20000)
        self.assertAlmostEqual(ng["ratio"]["per_conn_kib"], 0.5 / 16.4)
        self.assertAlmostEqual(ng["ratio"]["loaded_kib"], 20000 / 170000)
        self.assertEqual(me["ratio"]["per_conn_kib"], 1.0)
        self.assertEqual(ng["errors"], 7)
        self.assertIsNone(me["throughput"])

    def test_other_scenarios_get_no_memory_key(self):
        from .fixtures import run
        s = stats.summarize([run("echo", "connections=50", "ringio-uring", 1.0, 1.0)], BASE)
        self.assertNotIn("memory", s[0])
        self.assertNotIn("per_conn_kib", s[0]["ratio"])

    def test_table(self):
        s = stats.summarize(self.runs, BASE)
        text = report.memory_table(s, "ringio-uring")
        self.assertIn("| RSS all idle MiB median (min–max) |", text)
        row = [r for r in text.splitlines() if r.startswith("| connections=10000 | nginx |")][0]
        cells = [c.strip() for c in row.strip("|").split("|")]
        # before, loaded (MiB), x, after 1 s / 3 s, after/before, KiB/conn, x, CPU, failed, runs
        self.assertEqual(cells[2:], ["14.6", "19.5 (18.6–20.5)", "0.12x", "15.1 / 15.1", "1.03x",
                                     "0.500 (0.400–0.600)", "0.03x", "50.0", "7 of 30000", "3"])
        self.assertIn("RSS before 5.86 MiB, loaded 166 MiB, after 137 MiB, 16.4 KiB/connection, 0 of 10000",
                      report.memory_progress(self.runs[0]["metrics"]["memory"]))

    def test_section_mixes_units(self):
        from .fixtures import run
        dl = run("http-static", "load=download file=256MiB connections=1", "ringio-uring", 1.5, 300.0,
                 cell={"threads": 1, "load": "download", "file": "256MiB", "connections": 1})
        wrk = run("http-static", "load=wrk file=4KiB connections=100", "ringio-uring", 80000.0, 11.0,
                  cell={"threads": 1, "load": "wrk", "file": "4KiB", "connections": 100})
        slow = mem_run("ringio-uring", 6000, 170000, 35000, label="load=slow file=1MiB connections=2000")
        slow.update(scenario="http-static", cell={"threads": 1, "load": "slow", "file": "1MiB", "connections": 2000})
        res = {"summary": stats.summarize([wrk, dl, slow], BASE), "plan": [], "skipped": [],
               "runs": [wrk, dl, slow], "environment": {"clk_tck": 100}}
        text = report.scenario_section(res, "http-static")
        self.assertIn("throughput req/s median", text)
        self.assertIn("throughput GB/s median", text)
        self.assertIn("server CPU us/MB (usr+sys)", text)
        self.assertIn("RSS peak MiB median", text)
        self.assertIn("Kernel memory (socket buffers, the page cache) is not in RSS.", text)


# A stand-in HTTP/1.1 server: keep-alive, a fixed body per path.
BODIES = {"/": b"Hello world!", "/big": b"x" * (3 << 20)}


class Server:
    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(1024)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        buf = b""
        try:
            while True:
                d = c.recv(4096)
                if not d:
                    return
                buf += d
                while b"\r\n\r\n" in buf:
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    body = BODIES.get(head.split(b" ")[1].decode(), b"")
                    status = b"200 OK" if body else b"404 Not Found"
                    c.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode()
                              + b"\r\n\r\n" + body)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.ls.close()


class HttpmemTest(unittest.TestCase):
    def setUp(self):
        self.srv = Server()

    def tearDown(self):
        self.srv.close()

    def args(self, load, **kw):
        a = memload.parse_args([load, "--port", str(self.srv.port)] + (
            ["--pid", str(os.getpid()), "--connections", "40"] if load != "download" else ["--duration", "0.3"])
            + (["--path", "/big"] if load != "idle" else []))
        a.after = [0.05, 0.1]
        for k, v in kw.items():
            setattr(a, k, v)
        return a

    def test_idle(self):
        res = memload.idle(self.args("idle", idle_wait=0.05))
        self.assertEqual((res["ok"], res["failed"]), (40, 0), res["failures"])
        self.assertEqual(set(res["rss_kib"]), {"before", "loaded", "peak", "after_0.05s", "after_0.1s"})
        self.assertGreater(res["rss_kib"]["before"], 0)
        self.assertEqual(res["processes"], 1)

    def test_failures_are_counted(self):
        a = self.args("idle", idle_wait=0.05)
        a.connections = 5
        with socket.socket() as bound:  # a port that is bound but not listening: connects are refused
            bound.bind(("127.0.0.1", 0))
            a.port = bound.getsockname()[1]
            res = memload.idle(a)
        self.assertEqual((res["ok"], res["failed"], res["failures"]), (0, 5, {"connect": 5}))
        srv = Server()  # a path it does not have: 404
        try:
            a = self.args("slow", seconds=0.2, path="/nothing")
            a.port = srv.port
            res = memload.slow(a)
            self.assertEqual(res["failures"], {"status 404": 40})
        finally:
            srv.close()

    def test_slow(self):
        t = time.monotonic()
        res = memload.slow(self.args("slow", seconds=0.3))
        self.assertLess(time.monotonic() - t, 5)
        self.assertEqual((res["ok"], res["failed"]), (40, 0), res["failures"])
        # ~4 readings of 4 KiB per connection, far from the 3 MiB body
        self.assertGreater(res["bytes"], 40 * 4096)
        self.assertLess(res["bytes"], 40 * 64 * 1024)
        self.assertIsNotNone(res["heads_s"])

    def test_download(self):
        res = memload.download(self.args("download"))
        self.assertEqual(res["errors"], 0)
        self.assertGreater(res["bytes"], 3 << 20)
        self.assertGreaterEqual(res["downloads"], 1)
        self.assertAlmostEqual(res["gb_per_s"], res["bytes"] / res["seconds"] / 1e9, delta=res["gb_per_s"] * 1e-3)

    def test_script(self):
        import subprocess
        script = os.path.join(BENCH, "clients", "httpmem")
        out = subprocess.run([sys.executable, script, "idle", "--port", str(self.srv.port), "--pid", str(os.getpid()),
                              "--connections", "3", "--idle-wait", "0", "--after", "0"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        m = clients.parse("httpmem", out.stdout)
        self.assertEqual((m["ops"], m["errors"]), (3, 0))


if __name__ == "__main__":
    unittest.main()
