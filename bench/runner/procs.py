# SPDX-License-Identifier: Apache-2.0
"""Child processes: start pinned in their own process group, wait with a
deadline, stop by PID (SIGTERM, then SIGKILL), and never leave one behind.

The runner has no threads, so a preexec_fn is safe here.  Output goes to
files, never to pipes, so a chatty child can never block on a full pipe.
"""
import atexit
import ctypes
import os
import select
import signal
import socket
import subprocess
import time

_live = {}  # pid -> Popen, every child not yet reaped
PR_SET_PDEATHSIG = 1


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def _child_setup(cpus):
    def setup():
        # Dies with the runner even if the runner is killed with SIGKILL.
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if cpus:
            os.sched_setaffinity(0, cpus)
    return setup


class Child:
    """A started process with its output in files, and its exit status and
    rusage once reaped."""

    def __init__(self, argv, out_path, err_path, cpus=None, cwd=None, env=None):
        self.argv = list(argv)
        self.out_path, self.err_path = out_path, err_path
        self.cpus = sorted(cpus) if cpus else None
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            self.popen = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                cwd=cwd, env=env, start_new_session=True,
                preexec_fn=_child_setup(self.cpus))
        self.pid = self.popen.pid
        _live[self.pid] = self.popen
        self.started = time.monotonic()
        self.ended = None
        self.status = None  # exit code, or -signal
        self.rusage = None
        self._pidfd = _pidfd_open(self.pid)

    # -- state -------------------------------------------------------------
    def exited(self):
        """True once the process has exited (it may not be reaped yet)."""
        if self.status is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None and info.si_pid == self.pid

    def wait(self, timeout):
        """Waits up to `timeout` seconds for the exit; True if it exited."""
        deadline = time.monotonic() + timeout
        while not self.exited():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self._pidfd is not None:
                select.select([self._pidfd], [], [], min(left, 1.0))
            else:
                time.sleep(min(left, 0.01))
        return True

    def reap(self):
        """Collects exit status and rusage (first call only), and kills
        whatever is left of the process group."""
        if self.status is not None:
            return
        _killpg(self.pid, signal.SIGKILL)  # stragglers (e.g. nginx workers)
        try:
            _, st, ru = os.wait4(self.pid, 0)
            self.status = os.waitstatus_to_exitcode(st)
            self.rusage = ru
        except ChildProcessError:
            self.status = self.popen.returncode if self.popen.returncode is not None else -1
        self.popen.returncode = self.status
        self.ended = time.monotonic()
        _live.pop(self.pid, None)
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def stop(self, grace=5.0):
        """SIGTERM, then SIGKILL after `grace` seconds; reaps.  Returns True
        if it ended on SIGTERM within the grace period."""
        clean = True
        if not self.exited():
            _kill(self.pid, signal.SIGTERM)
            clean = self.wait(grace)
            if not clean:
                _killpg(self.pid, signal.SIGKILL)
                self.wait(5.0)
        self.reap()
        return clean

    def kill(self):
        _killpg(self.pid, signal.SIGKILL)
        self.reap()

    def output(self):
        return _read(self.out_path)

    def errors(self):
        return _read(self.err_path)


def _read(path):
    try:
        with open(path, "r", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _pidfd_open(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all():
    """Kills and reaps every child still alive: for atexit and signals."""
    for pid, popen in list(_live.items()):
        _killpg(pid, signal.SIGKILL)
        _kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        popen.returncode = -9
        _live.pop(pid, None)


def live_pids():
    return list(_live)


def install_cleanup():
    """atexit hook, and SIGINT/SIGTERM/SIGHUP turned into exceptions so that
    every finally block runs.  SIGINT is set explicitly: a shell starts
    background jobs with it ignored, and Python then leaves it ignored."""
    atexit.register(kill_all)

    def on_signal(signo, _frame):
        raise SystemExit(128 + signo)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)


# -- leftovers of a runner that was killed -------------------------------------
TMP_PREFIX = "ringio-bench-"


def tmp_prefix():
    """Prefix of this runner's temporary directories, the working directory
    of every server it starts: it names the runner's PID, so that a later
    runner can tell the leftovers of a killed one from a live one's."""
    return f"{TMP_PREFIX}{os.getpid()}-"


def reap_leftovers():
    """Kills, by PID, processes left by a runner that died without cleaning
    up (SIGKILL: nginx workers survive their master); returns their
    descriptions.  A process counts only if its working directory is a
    runner's temporary directory and that runner no longer runs."""
    import re
    import shutil
    import tempfile
    pat = re.compile(re.escape(os.path.join(tempfile.gettempdir(), TMP_PREFIX)) + r"(\d+)-")
    killed = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        m = pat.match(cwd)
        if m and not _runs(int(m.group(1))):
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    what = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                what = "?"
            _kill(int(name), signal.SIGKILL)
            killed.append(f"{name} {what}")
    base = tempfile.gettempdir()
    for d in os.listdir(base):
        m = re.match(re.escape(TMP_PREFIX) + r"(\d+)-", d)
        if m and not _runs(int(m.group(1))):
            shutil.rmtree(os.path.join(base, d), ignore_errors=True)
    return killed


def _runs(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# -- ports -------------------------------------------------------------------
def free_port():
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_accepts(port, timeout=0.2):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


# -- limits and CPUs -----------------------------------------------------------
def raise_fd_limit(want=1 << 20):
    """Raises RLIMIT_NOFILE for the runner and so for every child.  As root the
    hard limit goes up too (to fs.nr_open at most).  Returns the soft limit."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        with open("/proc/sys/fs/nr_open") as f:
            want = min(want, int(f.read()))
    except (OSError, ValueError):
        pass
    if os.geteuid() == 0 and hard != resource.RLIM_INFINITY and hard < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            pass
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    except (ValueError, OSError):
        return soft


def split_cpus(cpus):
    """Server CPUs and client CPUs: two halves of the usable set (the server
    gets the lower half), or both everything when there is only one CPU."""
    cpus = sorted(cpus)
    if len(cpus) < 2:
        return cpus, cpus
    half = len(cpus) // 2
    return cpus[:half], cpus[half:]


def cpu_list(cpus):
    """[0, 1, 2, 5] -> '0-2,5' (taskset's notation)."""
    out, start, prev = [], None, None
    for c in sorted(cpus):
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = c
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out)
