# SPDX-License-Identifier: Apache-2.0
"""The scenarios, their quick and full grids, and the rules that mark a grid
cell as beyond this machine instead of running it."""
import itertools
from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    mode: str  # server mode
    client: str
    x: str  # the cell parameter plotted on the x axis
    unit: str  # throughput unit
    op: str  # what CPU time is divided by
    what: str  # one line for the report
    subject_clients: tuple = ()  # the clients compared against one server (empty: servers are compared)

    @property
    def subjects_are_clients(self):
        return bool(self.subject_clients)


SCENARIOS = {s.name: s for s in [
    Scenario("pingpong", "pong", "ping", "sessions", "GiB/s", "round trip",
             "ping sends a block on each session and waits for all of it back; servers in pong mode"),
    Scenario("pingpong-seed", "pong", "uring-exec-ping", "sessions", "GiB/s", "block",
             "the seed io_uring executor's own ping (uring_exec, built from its sources by "
             "bench/peers/uring_exec/build.sh): each session sends a block, makes one read of up to a block "
             "and repeats; GiB/s is bytes read over its whole timeout; servers in pong mode, its own pong "
             "(uring-exec) among them"),
    Scenario("echo", "echo", "echo_bench", "connections", "req/s", "request",
             "echo_bench: each connection sends a message and waits for its echo, for a fixed time"),
    Scenario("churn", "echo", "churn_bench", "concurrency", "sessions/s", "session",
             "churn_bench: connect, M echo round trips, close, with C sessions at a time"),
    Scenario("http-wrk", "http", "wrk", "connections", "req/s", "request",
             "wrk, one thread, keep-alive HTTP/1.1 GET of 'Hello world!'"),
    Scenario("http-ab", "http", "ab", "concurrency", "req/s", "request",
             "ab, HTTP/1.0, one connection per request"),
    Scenario("https-wrk", "https", "wrk", "connections", "req/s", "request",
             "wrk over HTTPS, one thread, keep-alive HTTP/1.1 GET of 'Hello world!'; every server has the "
             "runner's P-256 certificate and OpenSSL's default TLS 1.3 suites"),
    Scenario("tls-handshake", "https", "ab", "concurrency", "req/s", "request",
             "ab over HTTPS, HTTP/1.0: a new connection and a full TLS handshake (no resumption) per request"),
    Scenario("client-cost", "echo", "echo_bench", "connections", "req/s", "round trip",
             "the same echo load from echo_bench and from raw_epoll_echo_client against one server; "
             "compares the clients' CPU per round trip", ("echo_bench", "raw_epoll_echo_client")),
    Scenario("pingpong-cancel", "pong", "ping", "sessions", "GiB/s", "round trip",
             "ping, ping --senders (the sender/receiver client) and ping --when-any (every recv and send "
             "raced against a timer with when_any: a cancellation set up and torn down per operation) "
             "against one pong server; compares the clients", ("ping", "ping-senders", "ping-when-any")),
    Scenario("echo-idle", "echo", "httpmem", "connections", "-", "connection",
             "httpmem echo-idle: N connections each echo 16 bytes once, then stay idle; the server's RSS "
             "before, with all N idle (after 1 s), and 1 s and 3 s after they close"),
    Scenario("tls-idle", "https", "httpmem", "connections", "-", "connection",
             "httpmem tls-idle: N keep-alive HTTPS connections each complete the handshake, send one GET / "
             "and read the response, then stay idle; the server's RSS before, with all N idle (after 1 s), "
             "and 1 s and 3 s after they close"),
    Scenario("http-idle", "http", "httpmem", "connections", "-", "connection",
             "httpmem idle: N keep-alive connections each send one GET / and read the response, then stay "
             "idle; the server's RSS before, with all N idle (after 1 s), and 1 s and 3 s after they close"),
    Scenario("ws-echo", "ws", "ws_bench", "connections", "msg/s", "message",
             "ws_bench: N WebSocket connections (client handshake, masked binary frames), each sends a "
             "message of L bytes and waits for the whole echo, for a fixed time; ringio's http_server "
             "/ws/echo, tokio-tungstenite, Boost.Beast"),
    Scenario("ws-idle", "ws", "httpmem", "connections", "-", "connection",
             "httpmem ws-idle: N connections each complete the WebSocket handshake (101) and stay open, idle; "
             "the server's RSS before, with all N idle (after 1 s), and 1 s and 3 s after they close"),
    Scenario("http-static", "http-static", "httpmem", "connections", "req/s", "request",
             "static files from a directory the runner fills once per run: wrk on a 4 KiB file, one "
             "connection downloading a 256 MiB file, and slow readers of a 1 MiB file with a 4 KiB "
             "receive buffer (server RSS before, at the peak, and after they close)"),
]}
ORDER = list(SCENARIOS) + ["switch", "fileio", "spawn", "hiredis"]
COST_CLIENTS = list(SCENARIOS["client-cost"].subject_clients)
# Not a client/server scenario: bench/runner/switch.py runs apps/switch_bench.
SWITCH = "switch"
# Not a client/server scenario either: bench/runner/fileio.py runs apps/file_bench and fio.
FILEIO = "fileio"
# Nor is spawn: bench/runner/spawn.py runs apps/spawn_bench and the tokio peer.
SPAWN = "spawn"
# Nor hiredis: bench/runner/hiredis.py runs apps/hiredis_bench against a redis-server.
HIREDIS = "hiredis"
# The scenarios that run before the client/server plan, with no cells of their own.
STANDALONE = (SWITCH, FILEIO, SPAWN, HIREDIS)

# Servers a scenario runs besides the selected ones when --servers is not given:
# churn compares ringio's task server with its fiber server and with plain blocking
# code on hooked fibers (the hooks' target: hooked >= 0.9x fibers' sessions/s), and the
# same blocking code on the seed framework's hooked coroutines (dyco) where it is built.
DEFAULT_EXTRA = {"churn": ["ringio-uring-fibers", "ringio-uring-hooked", "dyco"]}
# Default servers built outside ringio's build (churn's extra and quick servers): left
# out, without a skip line, when absent (named in --servers, they are reported as
# skipped with the command that builds them).
EXTRA_IF_BUILT = {"dyco"}

# The files of the static root: name in the cell -> (file name, size).  Real
# bytes, not sparse: a hole is read as zeros without touching the page cache.
STATIC_FILES = {"4KiB": ("4KiB.bin", 4096), "1MiB": ("1MiB.bin", 1 << 20), "256MiB": ("256MiB.bin", 256 << 20)}

# What one cell of http-static does: the client, throughput unit and what
# CPU time is divided by.  A cell without "load" is its scenario's.
LOADS = {"wrk": ("wrk", "req/s", "request"),
         "download": ("httpmem", "GB/s", "MB"),
         "slow": ("httpmem", "-", "connection"),
         "idle": ("httpmem", "-", "connection"),
         "echo-idle": ("httpmem", "-", "connection"),
         "tls-idle": ("httpmem", "-", "connection"),
         "ws-idle": ("httpmem", "-", "connection")}


def _grid(**axes):
    keys = list(axes)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(axes[k] for k in keys))]


# Message sizes of ws-echo: a small message, and one past a 16-bit frame length's
# short form (126 <= L < 65536) that fills a 16 KiB buffer.
WS_LENGTHS = [32, 16384]

QUICK_SECONDS = 2
FULL_SECONDS = 5
# Rounds per cell: the servers of a cell take turns, once per round (A B C A B C ...),
# and the targets are judged on the spread of the per-round ratios (verdict.py).
QUICK_REPEATS = 6
FULL_REPEATS = 3

# The quick default (`make bench`): the scenarios behind the central targets, each
# against the servers those targets name, in under 5 minutes on two cores with
# every peer built.  echo and ping/pong against the raw liburing loop (throughput
# and CPU parity, the fast path), echo against tokio too; HTTP hello against the raw loop and
# nginx; churn with ringio's fiber and hooked servers (the hooks' target) and, where it
# is built, dyco's hooked server (EXTRA_IF_BUILT).  Every other scenario is one
# --scenarios away, and --full runs them all.
QUICK_SERVERS = {
    "pingpong": ["ringio-uring", "raw-uring"],
    "echo": ["ringio-uring", "raw-uring", "tokio-percore"],
    "churn": ["ringio-uring", "ringio-uring-fibers", "ringio-uring-hooked", "dyco"],
    "http-wrk": ["ringio-uring", "raw-uring", "nginx"],
}
# The parity cells against the raw loop sit closest to their limits: more rounds
# (when --repeats is not given).
QUICK_ROUNDS = {"pingpong": 8, "echo": 8}
# Seconds the runner spends before the first run (perf probe, environment, venv
# check), for the estimate.
STARTUP_SECONDS = 10


def cells(name, full, seconds=None):
    """The grid of one scenario, as a list of parameter dicts.  The quick
    grids are one or two cells each; the quick default (QUICK_SERVERS) takes
    under 5 minutes on two cores (see docs/benchmarks.md)."""
    d = seconds or (FULL_SECONDS if full else QUICK_SECONDS)
    if name in STANDALONE:
        return []  # not client/server cells (bench/runner/switch.py, fileio.py, spawn.py, hiredis.py)
    if name == "pingpong":
        if full:
            return _grid(threads=[1, 2, 4, 8], sessions=[10, 100, 1000, 10000, 100000],
                         blocksize=[16384], timeout=[10])
        return _grid(threads=[1], sessions=[100], blocksize=[16384], timeout=[max(1, round(d))])
    if name == "echo":
        conns = [1, 50, 150, 300, 500, 1000] if full else [50, 500]
        return _grid(threads=[1], connections=conns, length=[128, 512, 1000] if full else [512], duration=[d])
    if name == "churn":
        if full:
            return _grid(threads=[1], concurrency=[100, 500, 1000, 5000, 10000], sessions=[50000], messages=[3])
        return _grid(threads=[1], concurrency=[1000], sessions=[20000], messages=[3])
    if name == "http-wrk":
        return _grid(threads=[1], connections=[100, 1000] if full else [100], duration=[d])
    if name == "http-ab":
        return _grid(threads=[1], concurrency=[100], requests=[100000 if full else 10000])
    if name == "https-wrk":
        return _grid(threads=[1], connections=[100, 1000] if full else [100], duration=[d], scheme=["https"])
    if name == "tls-handshake":
        return _grid(threads=[1], concurrency=[100], requests=[20000 if full else 2000], scheme=["https"])
    if name == "tls-idle":
        return _grid(threads=[1], load=["tls-idle"], connections=[5000], scheme=["https"])
    if name == "client-cost":
        return _grid(threads=[1], connections=[1, 50, 500] if full else [50], length=[512], duration=[d])
    if name == "pingpong-seed":
        return _grid(threads=[1], sessions=[10, 100, 1000] if full else [100], blocksize=[16384],
                     timeout=[10 if full else max(1, round(d))])
    if name == "pingpong-cancel":
        return _grid(threads=[1], sessions=[10, 100, 1000] if full else [100], blocksize=[16384],
                     timeout=[max(1, round(d))])
    if name == "http-idle":
        return _grid(threads=[1], load=["idle"], connections=[10000])
    if name == "echo-idle":
        return _grid(threads=[1], load=["echo-idle"], connections=[10000])
    if name == "ws-echo":
        # Quick: 100 connections only (both sizes, about half a minute with the three
        # servers); full: 100 and 1,000.
        return _grid(threads=[1], connections=[100, 1000] if full else [100], length=WS_LENGTHS, duration=[d])
    if name == "ws-idle":
        return _grid(threads=[1], load=["ws-idle"], connections=[10000])
    if name == "http-static":
        # The quick grid keeps only the slow readers: memory is what the quick
        # run must show on every change; throughput of static files is in the full one.
        slow = dict(threads=1, load="slow", file="1MiB", connections=2000, seconds=3)
        if not full:
            return [slow]
        return [dict(threads=1, load="wrk", file="4KiB", connections=100, duration=d),
                dict(threads=1, load="download", file="256MiB", connections=1, duration=d), slow]
    raise ValueError(f"unknown scenario {name}")


def probe_cell(name, cell):
    """The cell for the syscall-counting run: the same load, shorter (a ratio
    per operation needs no long run)."""
    c = dict(cell)
    if "duration" in c:
        # wrk takes whole seconds only.
        c["duration"] = min(c["duration"], 1 if client_of(name, c) == "wrk" else 0.5 if c["duration"] <= 2 else 2)
    if "timeout" in c:
        c["timeout"] = min(c["timeout"], 1 if c["timeout"] <= 2 else 2)
    if name in ("http-ab", "tls-handshake"):
        c["requests"] = min(c["requests"], max(2000, c["requests"] // 4))
    if name == "churn":
        c["sessions"] = min(c["sessions"], max(2000, c["sessions"] // 4, 2 * c["concurrency"]))
    return c


LABEL_KEYS = {"pingpong": ["threads", "sessions"], "pingpong-seed": ["sessions"], "pingpong-cancel": ["sessions"], "echo-idle": ["connections"],
              "https-wrk": ["connections"], "tls-handshake": ["concurrency"], "tls-idle": ["connections"], "echo": ["connections", "length"],
              "churn": ["concurrency"], "http-wrk": ["connections"], "http-ab": ["concurrency"],
              "client-cost": ["connections", "length"], "http-idle": ["connections"],
              "http-static": ["load", "file", "connections"],
              "ws-echo": ["connections", "length"], "ws-idle": ["connections"]}


def label(name, cell):
    """A short stable name for a cell of a scenario: 'threads=1 sessions=100'."""
    return " ".join(f"{k}={cell[k]}" for k in LABEL_KEYS[name] if k in cell)


def client_of(name, cell):
    """The client that loads a cell."""
    if "load" in cell:
        return LOADS[cell["load"]][0]
    return SCENARIOS[name].client


def unit_of(name, cell):
    """(throughput unit, what CPU time is divided by) of a cell."""
    if "load" in cell:
        return LOADS[cell["load"]][1:]
    return SCENARIOS[name].unit, SCENARIOS[name].op


def measures_memory(name, cell):
    """Whether the cell's figures are RSS readings rather than throughput."""
    return cell.get("load") in ("idle", "slow", "echo-idle", "tls-idle", "ws-idle")


def counts_syscalls(name, cell):
    """Whether a perf run per server follows the timed runs: not where the
    figures are memory (syscalls per connection opened say little)."""
    return not measures_memory(name, cell)


def connections(name, cell):
    """Simultaneous connections a cell opens (for fd and port limits)."""
    for k in ("concurrency", "connections", "sessions"):
        if k in cell:
            return int(cell[k])
    return 1


def mark(name, cell, ncpus, nofile, ports, server_cpus=None):
    """Why a cell is not run here (None: run it), and notes for one that is."""
    threads = int(cell.get("threads", 1))
    if threads > ncpus:
        return f"beyond this machine: {threads} threads on {ncpus} cores", []
    conns = connections(name, cell)
    need = conns + 64
    if need > nofile:
        return f"beyond the descriptor limit: {conns} connections need {need} fds per process, limit {nofile}", []
    notes = []
    if server_cpus and threads > server_cpus:
        notes.append(f"the server's {threads} threads share {server_cpus} CPU"
                     f"{'s' if server_cpus > 1 else ''} (the client has the others)")
    if conns > ports * 3 // 4:
        if name in ("pingpong", "pingpong-cancel", "echo"):
            notes.append(f"the client spreads its {conns} connections over several source addresses "
                         f"(127.0.0.x): one has {ports} ephemeral ports")
        else:
            notes.append(f"{conns} connections exceed the {ports} ephemeral ports towards one server port")
    return None, notes


CHURN_TIMEOUT = 120  # churn_bench --timeout: it stops on its own after this


def time_limit(name, cell):
    """Seconds after which a client that has not exited is killed."""
    if name == "churn":
        return CHURN_TIMEOUT + 30
    if name in ("http-ab", "tls-handshake"):
        return 300
    if measures_memory(name, cell):
        return 60 + 10 + 30 + expected_seconds(name, cell)  # httpmem's --open-timeout and --head-timeout
    return expected_seconds(name, cell) * 3 + 30


def expected_seconds(name, cell):
    """A rough length of one run, for the up-front estimate."""
    if measures_memory(name, cell):
        # Start and settling, opening (about 10,000 connections a second), the idle
        # second or the slow reading (after every response has begun), 3 s after the close.
        wait = float(cell["seconds"]) + 0.5 if "seconds" in cell else 1.0
        return 0.3 + int(cell["connections"]) / 10000.0 + wait + 3
    if "duration" in cell:
        return float(cell["duration"])
    if "timeout" in cell:
        return float(cell["timeout"])
    if name == "http-ab":
        return cell["requests"] / 8000.0
    if name == "tls-handshake":
        return cell["requests"] / 1500.0
    if name == "churn":
        return cell["sessions"] / 9000.0
    return 1.0
