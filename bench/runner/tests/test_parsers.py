# SPDX-License-Identifier: Apache-2.0
"""Parsing of client output, /proc/PID/stat, perf and build metadata."""
import unittest

from runner import clients, env, measure

WRK = """\
Running 1s test @ http://127.0.0.1:9312/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.27ms    1.66ms   8.77ms   84.76%
    Req/Sec    49.15k     2.74k   52.14k    60.00%
  Latency Distribution
     50%  339.00us
     75%    1.98ms
     90%    3.88ms
     99%    7.29ms
  48840 requests in 1.00s, 3.59MB read
  Socket errors: connect 19, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 3
Requests/sec:  48659.81
Transfer/sec:      3.57MB
"""

AB = """\
Concurrency Level:      10
Time taken for tests:   0.258 seconds
Complete requests:      2000
Failed requests:        5
   (Connect: 0, Receive: 0, Length: 5, Exceptions: 0)
Non-2xx responses:      2
Total transferred:      154000 bytes
Requests per second:    7741.32 [#/sec] (mean)
Time per request:       1.292 [ms] (mean)

Percentage of the requests served within a certain time (ms)
  50%      1
  66%      1
  90%      5
  99%      7
 100%      8 (longest request)
"""


class WrkTest(unittest.TestCase):
    def test_times(self):
        self.assertEqual(clients.wrk_time_us("339.00us"), 339.0)
        self.assertEqual(clients.wrk_time_us("1.98ms"), 1980.0)
        self.assertEqual(clients.wrk_time_us("1.50s"), 1.5e6)
        self.assertEqual(clients.wrk_time_us("2.00m"), 120e6)
        with self.assertRaises(clients.ParseError):
            clients.wrk_time_us("fast")

    def test_output(self):
        m = clients.parse("wrk", WRK)
        self.assertEqual(m["ops"], 48840)
        self.assertAlmostEqual(m["throughput"], 48659.81)
        self.assertEqual(m["errors"], 19 + 1 + 2 + 3)
        self.assertEqual(m["latency_us"]["p50"], 339.0)
        self.assertAlmostEqual(m["latency_us"]["p99"], 7290.0)
        self.assertAlmostEqual(m["latency_us"]["max"], 8770.0)
        self.assertAlmostEqual(m["latency_us"]["mean"], 1270.0)

    def test_garbage(self):
        with self.assertRaises(clients.ParseError):
            clients.parse("wrk", "unable to connect to 127.0.0.1:1 Connection refused\n")


class AbTest(unittest.TestCase):
    def test_output(self):
        m = clients.parse("ab", AB)
        self.assertEqual(m["ops"], 2000)
        self.assertAlmostEqual(m["throughput"], 7741.32)
        self.assertEqual(m["errors"], 7)
        self.assertEqual(m["latency_us"], {"p50": 1000.0, "p66": 1000.0, "p90": 5000.0, "p99": 7000.0,
                                           "max": 8000.0})
        self.assertEqual(m["raw"]["seconds"], 0.258)

    def test_missing(self):
        with self.assertRaises(clients.ParseError):
            clients.parse("ab", "apr_socket_connect(): Connection refused (111)\n")


class ResultLineTest(unittest.TestCase):
    def test_ping(self):
        out = ("ping: 100 sessions\nRESULT {\"gib_per_s\": 2.5, \"bytes\": 5368709120, \"round_trips\": 327680, "
               "\"seconds\": 2.0, \"errors\": 0, \"threads\": 1, \"sessions\": 100, \"blocksize\": 16384, "
               "\"backend\": \"uring\"}\n")
        m = clients.parse("ping", out)
        self.assertEqual(m["throughput"], 2.5)
        self.assertEqual(m["ops"], 327680)
        self.assertEqual(m["rate"], 163840)

    def test_echo_and_churn(self):
        echo = ('RESULT {"requests_per_s": 50000.0, "p50_us": 10, "p90_us": 20, "p99_us": 40, "p999_us": 90, '
                '"max_us": 400, "requests": 100000, "errors": 1}')
        m = clients.parse("echo_bench", "noise\n" + echo)
        self.assertEqual((m["ops"], m["errors"], m["latency_us"]["p999"]), (100000, 1, 90))
        self.assertEqual(clients.parse("raw_epoll_echo_client", echo)["ops"], 100000)
        churn = 'RESULT {"sessions_per_s": 20000, "mean_us": 1800, "p99_us": 9000, "failed": 3, "sessions": 5000}'
        m = clients.parse("churn_bench", churn)
        self.assertEqual((m["ops"], m["errors"], m["latency_us"]), (5000, 3, {"mean": 1800, "p99": 9000}))

    def test_last_line_wins_and_errors(self):
        text = 'RESULT {"a": 1}\nRESULT {"a": 2}\n'
        self.assertEqual(clients.parse_result_line(text), {"a": 2})
        with self.assertRaises(clients.ParseError):
            clients.parse_result_line("no result here\n")
        with self.assertRaises(clients.ParseError):
            clients.parse_result_line("RESULT {not json\n")


class CommandTest(unittest.TestCase):
    def test_commands(self):
        from runner.servers import Layout
        lay = Layout("/repo")
        cmd = clients.command(lay, "ping", {"threads": 2, "blocksize": 16384, "sessions": 10, "timeout": 10}, 9000)
        self.assertEqual(cmd, ["/repo/build/bench/apps/ping", "9000", "2", "16384", "10", "10"])
        cmd = clients.command(lay, "echo_bench", {"connections": 50, "length": 512, "duration": 1.0}, 9000)
        self.assertIn("--duration", cmd)
        self.assertEqual(cmd[cmd.index("--duration") + 1], "1")
        cmd = clients.command(lay, "wrk", {"connections": 100, "duration": 2}, 9000)
        self.assertEqual(cmd[1:], ["-t1", "-c100", "-d2s", "--latency", "http://127.0.0.1:9000/"])
        cmd = clients.command(lay, "ab", {"concurrency": 100, "requests": 20000}, 9000)
        self.assertEqual(cmd[-3:], ["-c100", "-n20000", "http://127.0.0.1:9000/"])


class ProcStatTest(unittest.TestCase):
    def test_name_with_spaces_and_parens(self):
        fields = ["S", "42"] + ["0"] * 9 + [str(3 * measure.CLK_TCK), str(measure.CLK_TCK // 2)] + ["0"] * 30
        text = "1234 (a) b (c)) " + " ".join(fields) + "\n"
        user, sys, ppid = measure.parse_stat(text)
        self.assertEqual((user, sys, ppid), (3.0, 0.5, 42))

    def test_real_self(self):
        import os
        with open(f"/proc/{os.getpid()}/stat") as f:
            user, sys, ppid = measure.parse_stat(f.read())
        self.assertEqual(ppid, os.getppid())
        self.assertGreaterEqual(user + sys, 0)


class PerfTest(unittest.TestCase):
    def test_counted(self):
        self.assertEqual(measure.parse_perf_csv("# started\n\n552149,,raw_syscalls:sys_enter,1984692385,100.00,,\n"),
                         552149)

    def test_not_counted(self):
        self.assertIsNone(measure.parse_perf_csv("<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n"))
        self.assertIsNone(measure.parse_perf_csv("<not supported>,,raw_syscalls:sys_enter,0,0,,\n"))
        self.assertIsNone(measure.parse_perf_csv(""))


class EnvTest(unittest.TestCase):
    def test_cmake_cache(self):
        c = env.parse_cmake_cache("// comment\nCMAKE_BUILD_TYPE:STRING=Release\n"
                                  "CMAKE_CXX_FLAGS_RELEASE:STRING=-O3 -DNDEBUG\n# x\nFOO-ADVANCED:INTERNAL=1\n")
        self.assertEqual(c["CMAKE_BUILD_TYPE"], "Release")
        self.assertEqual(c["CMAKE_CXX_FLAGS_RELEASE"], "-O3 -DNDEBUG")

    def test_cargo_lock(self):
        import tempfile
        import os
        text = ('[[package]]\nname = "tokio-macros"\nversion = "2.0.0"\n\n'
                '[[package]]\nname = "tokio"\nversion = "1.54.1"\nsource = "registry"\n')
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "Cargo.lock")
            with open(p, "w") as f:
                f.write(text)
            self.assertEqual(env.cargo_lock_version(p, "tokio"), "1.54.1")
            self.assertIsNone(env.cargo_lock_version(p, "mio"))


if __name__ == "__main__":
    unittest.main()
