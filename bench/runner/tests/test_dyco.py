# SPDX-License-Identifier: Apache-2.0
"""dyco-coroutine's hooked echo server as a churn peer: its mode, command line and
absence (named: skipped with the build command; churn's default extra: left out), its
build script's usage, and (where bench/peers/dyco/build.sh has built it) the real server
echoing, closing its connections and stopping on SIGTERM."""
import os
import re
import socket
import subprocess
import tempfile
import unittest

from runner import main, servers
from runner.tests.test_plan import fake_layout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD_SH = os.path.join(ROOT, "bench", "peers", "dyco", "build.sh")
CHURN_APPS = ["echo_server", "churn_bench", "blocking_echo_hooked"]


def built_server():
    """The dyco_echo_server of a build directory (RINGIO_DYCO_SERVER, or the default
    build/bench and build/dev), or None."""
    for path in [os.environ.get("RINGIO_DYCO_SERVER", "")] + [
            os.path.join(ROOT, b, "bench", "peers", servers.DYCO_BINARY) for b in ("build/bench", "build/dev")]:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class DycoPeer(unittest.TestCase):
    def test_echo_mode_only_and_named_only(self):
        self.assertTrue(servers.supports(servers.DYCO, "echo"))
        for mode in ("pong", "http", "http-static", "https", "ws"):
            self.assertFalse(servers.supports(servers.DYCO, mode), mode)
        self.assertIn(servers.DYCO, servers.KNOWN)
        self.assertNotIn(servers.DYCO, servers.ORDER)
        self.assertIn(servers.DYCO, main.USAGE_EPILOG)

    def test_command_line_one_thread(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, peers=[servers.DYCO_BINARY])
            s = servers.spec(lay, servers.DYCO, "echo", 9000, {"threads": 1, "concurrency": 1000}, d)
            self.assertEqual(s.argv[0], os.path.join(d, "build/bench/bench/peers", servers.DYCO_BINARY))
            self.assertEqual(s.argv[1:], ["--port", "9000"])
            self.assertTrue(s.ready_line)
            self.assertFalse(s.kill_only)
            with self.assertRaisesRegex(servers.Unavailable, "one thread"):
                servers.spec(lay, servers.DYCO, "echo", 9000, {"threads": 2}, d)

    def test_absent_binary_names_the_build_script(self):
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d)
            with self.assertRaisesRegex(servers.Unavailable,
                                        r"build/bench/bench/peers/dyco_echo_server not built \(bench/peers/dyco/"
                                        r"build.sh DYCO_DIR build/bench/bench/peers"):
                servers.check(lay, servers.DYCO, "echo")

    def test_churn_runs_it_by_default_only_when_built(self):
        for args in (["--scenarios", "churn,echo"], ["--full", "--scenarios", "churn,echo"]):
            a = main.parse_args(args)
            with tempfile.TemporaryDirectory() as d:
                plan, skipped = main.make_plan(a, fake_layout(d, apps=CHURN_APPS), 2, [0], 20000, 28232)
                by = {p["scenario"]: p for p in plan}
                self.assertNotIn(servers.DYCO, by["churn"]["subjects"], args)
                self.assertFalse([s for s in skipped if s.get("subject") == servers.DYCO], args)  # no line
            with tempfile.TemporaryDirectory() as d:
                lay = fake_layout(d, apps=CHURN_APPS, peers=[servers.DYCO_BINARY])
                plan, skipped = main.make_plan(a, lay, 2, [0], 20000, 28232)
                by = {p["scenario"]: p for p in plan}
                self.assertEqual(by["churn"]["subjects"][-3:], ["ringio-uring-fibers", "ringio-uring-hooked", "dyco"],
                                 args)
                self.assertNotIn(servers.DYCO, by["echo"]["subjects"], args)  # churn's only

    def test_named_but_absent_is_skipped_with_the_reason(self):
        with tempfile.TemporaryDirectory() as d:
            a = main.parse_args(["--scenarios", "churn", "--servers", "ringio-uring,dyco"])
            plan, skipped = main.make_plan(a, fake_layout(d, apps=CHURN_APPS), 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], ["ringio-uring"])
            mine = [s for s in skipped if s.get("subject") == servers.DYCO]
            self.assertEqual(len(mine), 1)
            self.assertIn("bench/peers/dyco/build.sh", mine[0]["reason"])
        with tempfile.TemporaryDirectory() as d:
            lay = fake_layout(d, apps=CHURN_APPS, peers=[servers.DYCO_BINARY])
            plan, _ = main.make_plan(a, lay, 2, [0], 20000, 28232)
            self.assertEqual(plan[0]["subjects"], ["ringio-uring", "dyco"])

    def test_build_script_usage(self):
        for args in ([], ["--help"], ["/nonexistent-dyco-tree"], ["a", "b", "c"]):
            r = subprocess.run([BUILD_SH] + args, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("build.sh DYCO_DIR [OUT_DIR]", r.stderr)
        with tempfile.TemporaryDirectory() as d:  # a directory that is no dyco tree
            r = subprocess.run([BUILD_SH, d, os.path.join(d, "out")], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn("missing", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out")))


@unittest.skipUnless(built_server(), "dyco_echo_server is not built (bench/peers/dyco/build.sh DYCO_DIR OUT_DIR)")
class DycoServes(unittest.TestCase):
    def test_usage_echo_close_and_sigterm(self):
        path = built_server()
        for args in ([], ["--port"], ["--port", "70000"], ["--threads", "1"]):
            r = subprocess.run([path] + args, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("usage", r.stderr)
        p = subprocess.Popen([path, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            line = p.stdout.readline()
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            self.assertIsNotNone(m, line)
            port = int(m.group(1))
            payloads = [b"x", os.urandom(8), os.urandom(100000)]
            conns = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in payloads]
            for c, data in zip(conns, payloads):
                c.sendall(data)
                c.shutdown(socket.SHUT_WR)
            for c, data in zip(conns, payloads):
                got = b""
                while True:
                    b = c.recv(65536)
                    if not b:
                        break  # the server closed its side after our EOF
                    got += b
                self.assertEqual(got, data)
                c.close()
            p.terminate()
            self.assertEqual(p.wait(30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()


if __name__ == "__main__":
    unittest.main()
