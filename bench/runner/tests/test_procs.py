# SPDX-License-Identifier: Apache-2.0
"""Children are stopped by PID, their process groups die with them, and no
process outlives the runner's cleanup."""
import os
import tempfile
import time
import unittest

from runner import measure, procs


def alive(pid, settle=2.0):
    """Whether pid still runs (a zombie counts as gone), after up to `settle`
    seconds for a signal to take effect."""
    deadline = time.monotonic() + settle
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return _running(pid)


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class ChildTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "out")
        self.err = os.path.join(self.dir.name, "err")

    def tearDown(self):
        procs.kill_all()
        self.dir.cleanup()

    def grandchild(self, child):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            tree = measure.process_tree(child.pid)
            if len(tree) > 1:
                return [p for p in tree if p != child.pid][0]
            time.sleep(0.01)
        self.fail("no grandchild")

    def test_sigterm_stops_the_group(self):
        c = procs.Child(["sh", "-c", "sleep 30 & echo ready; wait"], self.out, self.err)
        g = self.grandchild(c)
        self.assertTrue(c.stop(grace=5))
        self.assertEqual(c.status, -15)
        self.assertFalse(alive(g))
        self.assertNotIn(c.pid, procs.live_pids())

    def test_sigkill_after_grace(self):
        c = procs.Child(["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], self.out, self.err)
        while not c.output():
            time.sleep(0.01)
        t = time.monotonic()
        self.assertFalse(c.stop(grace=0.3))
        self.assertLess(time.monotonic() - t, 3)
        self.assertEqual(c.status, -9)

    def test_exit_status_rusage_and_affinity(self):
        cpu = sorted(os.sched_getaffinity(0))[-1]
        c = procs.Child(["sh", "-c", "grep Cpus_allowed_list /proc/self/status; exit 3"], self.out, self.err,
                        cpus=[cpu])
        self.assertTrue(c.wait(5))
        c.reap()
        self.assertEqual(c.status, 3)
        self.assertIsNotNone(c.rusage)
        self.assertIn(f"\t{cpu}", c.output())

    def test_kill_all(self):
        c = procs.Child(["sleep", "30"], self.out, self.err)
        procs.kill_all()
        self.assertFalse(alive(c.pid))
        self.assertEqual(procs.live_pids(), [])


class HelpersTest(unittest.TestCase):
    def test_cpu_list(self):
        self.assertEqual(procs.cpu_list([0, 1, 2, 5, 7, 8]), "0-2,5,7-8")
        self.assertEqual(procs.cpu_list([3]), "3")

    def test_split(self):
        self.assertEqual(procs.split_cpus([0, 1]), ([0], [1]))
        self.assertEqual(procs.split_cpus([0, 1, 2, 3, 4]), ([0, 1], [2, 3, 4]))
        self.assertEqual(procs.split_cpus([0]), ([0], [0]))

    def test_free_port(self):
        p = procs.free_port()
        self.assertTrue(1024 <= p <= 65535)
        self.assertFalse(procs.port_accepts(p))


if __name__ == "__main__":
    unittest.main()
