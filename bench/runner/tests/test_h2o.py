# SPDX-License-Identifier: Apache-2.0
"""h2o as a peer: the modes it serves, its configuration, its targets, and (when
Debian's h2o is installed) a real h2o started from the generated configuration."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

from runner import procs, servers, targets


class H2oConfTest(unittest.TestCase):
    def test_modes(self):
        for mode in ("http", "http-static", "https"):
            self.assertTrue(servers.supports("h2o", mode), mode)
        for mode in ("echo", "pong", "ws"):
            self.assertFalse(servers.supports("h2o", mode), mode)
        self.assertIn("h2o", servers.ORDER)

    def test_hello_static_and_tls(self):
        hello = servers.h2o_conf("/tmp/x", 9123, 2, 10064, user="bench")
        self.assertIn("num-threads: 2", hello)
        self.assertIn("port: 9123", hello)
        self.assertIn("max-connections: 10064", hello)
        self.assertIn("file.file: /tmp/x/hello", hello)
        self.assertIn("user: bench", hello)
        self.assertNotIn("ssl:", hello)
        static = servers.h2o_conf("/tmp/x", 9123, 1, 100, root="/srv/files")
        self.assertIn("file.dir: /srv/files", static)
        self.assertIn("max-connections: 1024", static)  # never below h2o's own default
        tls = servers.h2o_conf("/tmp/x", 9123, 1, tls=("/c.pem", "/k.pem"))
        self.assertIn("certificate-file: /c.pem", tls)
        self.assertIn("key-file: /k.pem", tls)

    def test_targets(self):
        def group(scen, label, cell, subject, cpu, thr):
            return {"scenario": scen, "cell_label": label, "cell": cell, "subject": subject,
                    "server_us": {"median": cpu}, "throughput": {"median": thr}}
        cell = {"threads": 1, "connections": 100}
        summary = [group("http-wrk", "connections=100", cell, "ringio-uring", 7.0, 100),
                   group("http-wrk", "connections=100", cell, "h2o", 10.0, 90)]
        rows = targets._h2o_targets(summary, lambda s, subjects: "missing")
        hello = [r for r in rows if r["target"].startswith("http-wrk")]
        self.assertEqual(len(hello), 1)
        self.assertTrue(hello[0]["met"])  # 0.70x <= 0.80x
        self.assertAlmostEqual(hello[0]["ratio"], 0.7)
        others = [r for r in rows if not r["target"].startswith("http-wrk")]
        self.assertTrue(all(r["met"] is None and "missing" in r["measured"] for r in others))


@unittest.skipUnless(shutil.which("h2o"), "Debian's h2o is not installed (scripts/install-deps.sh bench)")
class H2oServesTest(unittest.TestCase):
    def test_hello_from_the_generated_configuration(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            port = procs.free_port()
            conf = servers.write_h2o_conf(d, port, 1, 100)
            p = subprocess.Popen([shutil.which("h2o"), "-m", "worker", "-c", conf], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
            try:
                deadline = time.monotonic() + 20
                while not procs.port_accepts(port):
                    self.assertIsNone(p.poll(), p.stderr.read().decode() if p.poll() is not None else "")
                    self.assertLess(time.monotonic(), deadline, "h2o did not listen")
                    time.sleep(0.05)
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
                self.assertEqual(body, b"Hello world!")
            finally:
                p.kill()
                p.wait()
                p.stderr.close()


if __name__ == "__main__":
    unittest.main()
