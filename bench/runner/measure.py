# SPDX-License-Identifier: Apache-2.0
"""Server CPU time from /proc, client CPU from rusage, and syscall counts
from perf's raw_syscalls:sys_enter tracepoint."""
import os
import select
import signal
import subprocess
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
TRACEPOINT = "raw_syscalls:sys_enter"


def parse_stat(text):
    """(user_s, sys_s, ppid) from the text of /proc/PID/stat.  The name field
    may hold spaces and parentheses, so split after its last ')'."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): field n is rest[n - 3].
    ppid = int(rest[1])
    utime, stime = int(rest[11]), int(rest[12])
    return utime / CLK_TCK, stime / CLK_TCK, ppid


def _stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def process_tree(pid):
    """pid and all its descendants (nginx's workers, say)."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st:
                children.setdefault(st[2], []).append(int(name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return sorted(out)


def cpu_times(pids):
    """Summed (user_s, sys_s) of the processes; all their threads, live or
    ended, are in each process's own utime/stime."""
    user = sys = 0.0
    for pid in pids:
        st = _stat(pid)
        if st:
            user += st[0]
            sys += st[1]
    return user, sys


def parse_proc_stat(text):
    """(busy_s, steal_s) of the whole machine from /proc/stat's 'cpu' line:
    busy is user+nice+system+irq+softirq (guest time is inside user)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            v += [0] * (8 - len(v))
            busy = v[0] + v[1] + v[2] + v[5] + v[6]
            return busy / CLK_TCK, v[7] / CLK_TCK
    return 0.0, 0.0


def machine_cpu():
    try:
        with open("/proc/stat") as f:
            return parse_proc_stat(f.read())
    except OSError:
        return 0.0, 0.0


def rusage_cpu(ru):
    return (ru.ru_utime, ru.ru_stime) if ru is not None else (None, None)


def parse_perf_csv(text, event=TRACEPOINT):
    """The count from `perf stat -x,` output, or None when not counted."""
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) >= 3 and parts[2] == event:
            try:
                return int(float(parts[0]))
            except ValueError:
                return None  # '<not counted>' or '<not supported>'
    return None


def _try_perf(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    return parse_perf_csv(r.stderr), r.stderr.strip().splitlines()[-1:] or [""]


def probe_perf():
    """(works, note).  Mounts tracefs once if it is missing and we are root."""
    argv = ["perf", "stat", "-x,", "-e", TRACEPOINT, "--", "true"]
    count, tail = _try_perf(argv)
    if count:
        return True, f"perf stat -e {TRACEPOINT} works"
    note = f"perf stat -e {TRACEPOINT} failed: {tail[0] if tail else ''}"
    tracing = "/sys/kernel/tracing"
    if os.geteuid() == 0 and os.path.isdir(tracing) and not os.listdir(tracing):
        subprocess.run(["mount", "-t", "tracefs", "nodev", tracing], capture_output=True)
        count, _ = _try_perf(argv)
        if count:
            return True, f"perf stat -e {TRACEPOINT} works (the runner mounted tracefs at /sys/kernel/tracing)"
    return False, note + "; syscalls per operation not measured"


class SyscallCounter:
    """`perf stat -p PIDS` started with its events disabled, enabled and
    disabled through a control FIFO, so it counts exactly the load window."""

    def __init__(self, pids, cpus=None):
        from . import procs
        self.dir = tempfile.mkdtemp(prefix=procs.tmp_prefix() + "perf-")
        self.ctl = os.path.join(self.dir, "ctl")
        self.ack = os.path.join(self.dir, "ack")
        self.out = os.path.join(self.dir, "out")
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        self.child = procs.Child(
            ["perf", "stat", "-x,", "-o", self.out, "-D", "-1",
             "--control", f"fifo:{self.ctl},{self.ack}", "-e", TRACEPOINT,
             "-p", ",".join(str(p) for p in pids)],
            os.path.join(self.dir, "stdout"), os.path.join(self.dir, "stderr"), cpus=cpus)
        # O_RDWR: neither open blocks, whether or not perf has opened its end.
        self.ctl_fd = os.open(self.ctl, os.O_RDWR)
        self.ack_fd = os.open(self.ack, os.O_RDWR)
        self.enabled = False

    def _command(self, word, timeout=10.0):
        os.write(self.ctl_fd, (word + "\n").encode())
        deadline = time.monotonic() + timeout
        buf = b""
        while b"ack" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.child.exited():
                return False
            r, _, _ = select.select([self.ack_fd], [], [], min(left, 0.5))
            if r:
                buf += os.read(self.ack_fd, 64)
        return True

    def enable(self):
        self.enabled = self._command("enable")
        return self.enabled

    def stop(self):
        """Stops perf; the count, or None."""
        try:
            if self.enabled:
                self._command("disable")
            if not self.child.exited():
                os.kill(self.child.pid, signal.SIGINT)  # perf prints its counts
                if not self.child.wait(5.0):
                    self.child.kill()
            self.child.reap()
            with open(self.out) as f:
                return parse_perf_csv(f.read()) if self.enabled else None
        except OSError:
            return None
        finally:
            self.close()

    def close(self):
        for fd in (self.ctl_fd, self.ack_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.ctl_fd = self.ack_fd = -1
        if self.child.status is None:
            self.child.kill()
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)
