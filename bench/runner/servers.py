# SPDX-License-Identifier: Apache-2.0
"""The servers under test: where their binaries are and how each one is
started for a mode (echo, pong, http) on a port."""
import os
import shutil
from dataclasses import dataclass, field

RINGIO = {"ringio-uring": "uring", "ringio-epoll": "epoll", "ringio-uring-poll": "uring-poll"}
PEERS = {  # name -> (binary, extra arguments)
    "raw-uring": ("raw_uring_server", []),
    "raw-epoll": ("raw_epoll_server", []),
    "asio-epoll": ("asio_server_epoll", []),
    "asio-uring": ("asio_server_uring", []),
    "tokio-mt": ("tokio_server", ["--runtime", "mt"]),
    "tokio-percore": ("tokio_server", ["--runtime", "per-core"]),
    # Boost.Beast's WebSocket echo (ws mode only): one io_context per thread.
    "beast": ("beast_ws_server", []),
}
# ringio-uring with one fast-path option changed; run only when named in --servers.
VARIANTS = {  # name -> (backend, extra server arguments, modes that take them)
    "ringio-uring-acceptor": ("uring", ["--dispatch", "acceptor"], {"echo", "http"}),
    "ringio-uring-sqpoll": ("uring", ["--sqpoll"], {"echo", "http"}),
    "ringio-uring-single-accept": ("uring", ["--single-accept"], {"echo", "http"}),
    "ringio-uring-single-recv": ("uring", ["--recv", "single"], {"echo", "pong"}),
    "ringio-uring-nodefer": ("uring", ["--no-defer-taskrun"], {"echo", "pong", "http"}),
    # File bodies read through the ring into a buffer (the path before sendfile).
    "ringio-uring-copy": ("uring", ["--no-sendfile"], {"http"}),
    "ringio-uring-fibers": ("uring", ["--fibers"], {"echo"}),
    "ringio-epoll-fibers": ("epoll", ["--fibers"], {"echo"}),
    "ringio-uring-senders": ("uring", ["--senders"], {"pong"}),
    # pong: every arrival is sent back at once from the pool buffer (no gathering into blocks).
    "ringio-uring-arrivals": ("uring", ["--reply", "arrivals"], {"pong"}),
    # pong: a pool of 256 receive buffers instead of 4,096 (a smaller working set).
    "ringio-uring-pool256": ("uring", ["--pool-buffers", "256"], {"pong"}),
    # Connections accepted into each ring's file table (IOSQE_FIXED_FILE on every op).
    "ringio-uring-direct": ("uring", ["--direct-fds"], {"echo", "pong"}),
    # Receive-buffer options of the multishot receiver (buffer_pool_options).
    "ringio-uring-bundle": ("uring", ["--recv-bundle", "on"], {"echo", "pong"}),
    "ringio-uring-nobundle": ("uring", ["--recv-bundle", "off"], {"echo", "pong"}),
    "ringio-uring-pbufinc": ("uring", ["--pbuf-inc", "on"], {"echo", "pong"}),
    "ringio-uring-bundle-pbufinc": ("uring", ["--recv-bundle", "on", "--pbuf-inc", "on"], {"echo", "pong"}),
    # Sends of 16 KiB and more as IORING_OP_SEND_ZC (http-static: bodies read into a
    # buffer by ringio-uring-zc-copy: sendfile would not use it).
    "ringio-uring-zc": ("uring", ["--send-zc", "16384"], {"echo", "pong", "http"}),
    "ringio-uring-zc-copy": ("uring", ["--send-zc", "16384", "--no-sendfile"], {"http"}),
    # Min-wait batching: the loop waits up to 50 us to take completions in one batch.
    "ringio-uring-minwait": ("uring", ["--min-wait", "50"], {"echo", "pong", "http"}),
    # Busy polling: 50 us after each completion the loop asks the kernel without sleeping
    # (as a spinning executor does), so the client's sends need no wake-up of the server.
    "ringio-uring-busypoll": ("uring", ["--busy-poll", "50"], {"echo", "pong", "http"}),
    "ringio-epoll-busypoll": ("epoll", ["--busy-poll", "50"], {"echo", "pong", "http"}),
    # The loop's sleeps counted as I/O wait (without IORING_ENTER_NO_IOWAIT, the default
    # from Linux 6.15 on): the "off" side of that feature.
    "ringio-uring-iowait": ("uring", ["--iowait"], {"echo", "pong", "http"}),
    # Each ring at its full size from the start (4,096 SQ / 65,536 CQ entries) instead of
    # 256 / 1,024 grown in place under load (IORING_REGISTER_RESIZE_RINGS, Linux 6.13):
    # the "off" side of ring resize.
    "ringio-uring-noresize": ("uring", ["--no-ring-resize"], {"echo", "pong", "http"}),
    # Metrics on and off (docs/operations.md): the loop's counters are always kept;
    # "on" also times the loop (the default) and serves GET /metrics on a port of its
    # own, "off" turns the loop timing off (RINGIO_LOOP_TIMING=0) and serves nothing.
    "ringio-uring-metrics": ("uring", ["--metrics-port", "0"], {"echo", "pong", "http"}),
    "ringio-uring-nometrics": ("uring", [], {"echo", "pong", "http"}),
}
# Environment a variant's server starts with, on top of the runner's.
VARIANT_ENV = {"ringio-uring-nometrics": {"RINGIO_LOOP_TIMING": "0"}}
# --metrics-cost: the pair that measures what the metrics cost.
METRICS_COST = ["ringio-uring-metrics", "ringio-uring-nometrics"]
# The seed io_uring executor's own pong (bench/peers/uring_exec/build.sh builds it from
# its sources); pong mode only. It accepts a fixed number of sessions, so it is given
# far more than a run opens and stopped by PID like the others.
URING_EXEC = "uring-exec"
URING_EXEC_SESSIONS = 1 << 30
TOKIO = ("tokio-mt", "tokio-percore")
# h2o (Debian's h2o): one process with --threads event loops (num-threads), in the
# http, http-static and https modes.
H2O = "h2o"
# Plain blocking POSIX code on ringio fibers through the system-call hooks
# (apps/blocking_echo_hooked: accept4/read/write/close, a fiber per connection); echo
# mode, one thread. Named only, and in churn by default (scenarios.DEFAULT_EXTRA).
HOOKED_APP = "blocking_echo_hooked"
HOOKED = {"ringio-uring-hooked": "uring", "ringio-epoll-hooked": "epoll"}
# The seed coroutine framework's own hooked server: the same blocking recv/send loop on
# dyco-coroutine (one coroutine per connection, its socket hooks, one thread), built from
# dyco's sources by bench/peers/dyco/build.sh; echo mode. Named only, and in churn by
# default when it is built (scenarios.DEFAULT_EXTRA, scenarios.EXTRA_IF_BUILT).
DYCO = "dyco"
DYCO_BINARY = "dyco_echo_server"
ORDER = list(RINGIO) + list(PEERS) + [URING_EXEC, "nginx", H2O]
KNOWN = ORDER + list(VARIANTS) + list(HOOKED) + [DYCO]
BASELINE = "ringio-uring"
RINGIO_APP = {"echo": "echo_server", "pong": "pong", "http": "http_server", "http-static": "http_server",
              "https": "http_server", "ws": "http_server"}
WS_PATH = "/ws/echo"  # ringio's http_server serves the echo there; the peers on any path
# ws mode: ringio's three backends, tokio-tungstenite on one current-thread runtime
# (tokio_server --mode ws --runtime per-core) and Boost.Beast.
WS_SERVERS = set(RINGIO) | {"tokio-percore", "beast"}
RINGIO_MAX_CONNECTIONS = 10000  # http_server's default --max-connections
HEADROOM = 64  # connections a server may see beyond a cell's (the readiness probe, stragglers)


def baseline(subjects=()):
    """The server the others are compared with: ringio-uring, or with metrics on
    and off but not ringio-uring, metrics off."""
    if BASELINE not in subjects and METRICS_COST[1] in subjects:
        return METRICS_COST[1]
    return BASELINE


class Unavailable(Exception):
    """This server cannot serve this mode here; the message says why."""


@dataclass
class ServerSpec:
    name: str
    mode: str
    argv: list
    binary: str
    ready_line: bool = True  # prints one stdout line once it serves
    children: int = 0  # worker processes to wait for (nginx)
    tmpdir: str = None
    notes: list = field(default_factory=list)
    kill_only: bool = False  # ignores SIGTERM (blocks it): stopped with SIGKILL at once
    env: dict = field(default_factory=dict)  # set in the server's environment


@dataclass
class Layout:
    """Where the build put things, relative to the repository root."""
    root: str
    build: str = "build/bench"

    def app(self, name):
        return os.path.join(self.root, self.build, "apps", name)

    def peer(self, binary):
        if binary == "tokio_server":
            return os.path.join(self.root, "bench/peers/tokio/target/release/tokio_server")
        return os.path.join(self.root, self.build, "bench/peers", binary)

    def nginx(self):
        return shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)

    def h2o(self):
        return shutil.which("h2o") or ("/usr/bin/h2o" if os.path.exists("/usr/bin/h2o") else None)


def supports(name, mode):
    if mode == "http-static":
        # Every server with an http mode is listed, so that those without
        # static files show up as skipped, with the reason, in the report.
        return supports(name, "http")
    if mode == "https":
        # TLS servers, all with the same certificate: ringio's http_server (OpenSSL),
        # nginx (OpenSSL) and the tokio peer (rustls).
        return name in RINGIO or name in ("nginx", H2O) or name in TOKIO
    if mode == "ws" or name == "beast":
        return mode == "ws" and name in WS_SERVERS
    if name in VARIANTS:
        return mode in VARIANTS[name][2]
    if name in HOOKED or name == DYCO:
        return mode == "echo"
    if name == URING_EXEC:
        return mode == "pong"
    return name not in ("nginx", H2O) or mode == "http"


def binary_for(layout, name, mode):
    """Path of the binary that serves `mode` as `name` (may not exist)."""
    if name in RINGIO or name in VARIANTS:
        return layout.app(RINGIO_APP[mode])
    if name in PEERS:
        return layout.peer(PEERS[name][0])
    if name in HOOKED:
        return layout.app(HOOKED_APP)
    if name == URING_EXEC:
        return layout.peer("uring_exec_pong")
    if name == DYCO:
        return layout.peer(DYCO_BINARY)
    if name == "nginx":
        return layout.nginx() or "nginx"
    if name == H2O:
        return layout.h2o() or "h2o"
    raise ValueError(f"unknown server {name}")


def check(layout, name, mode):
    """Raises Unavailable when `name` cannot serve `mode` in this build."""
    if not supports(name, mode):
        raise Unavailable(f"{name} has no {mode} mode")
    if mode == "http-static" and name in PEERS:
        raise Unavailable(f"{name} serves no files (its http mode answers every GET with 'Hello world!')")
    path = binary_for(layout, name, mode)
    if not (path and os.path.isfile(path) and os.access(path, os.X_OK)):
        rel = os.path.relpath(path, layout.root) if os.path.isabs(path) else path
        if name == URING_EXEC:
            raise Unavailable(f"{rel} not built (bench/peers/uring_exec/build.sh builds it from source trees)")
        if name == DYCO:
            raise Unavailable(f"{rel} not built (bench/peers/dyco/build.sh DYCO_DIR {os.path.dirname(rel)} "
                              "builds it from a dyco-coroutine source tree)")
        raise Unavailable(f"{rel} not built")
    return path


def _http_args(mode, cell, static_root):
    """http_server's arguments beyond port, threads and backend: the root of
    the static files, and a connection limit above the cell's connections
    where its default would refuse some of them."""
    out = []
    if mode == "http-static":
        out += ["--root", _need_root(static_root)]
    conns = int(cell.get("connections", 0))
    if (mode.startswith("http") or mode == "ws") and conns + HEADROOM > RINGIO_MAX_CONNECTIONS:  # http, http-static, https
        out += ["--max-connections", str(conns + HEADROOM)]
    return out


def _need_root(static_root):
    if not static_root:
        raise Unavailable("no static root was made for this run")
    return static_root


def _need_tls(tls_files):
    if not tls_files:
        raise Unavailable("no certificate was made for this run")
    return tls_files


def spec(layout, name, mode, port, cell, tmpdir, static_root=None, tls_files=None):
    """The command line that starts `name` in `mode` on 127.0.0.1:port
    (http-static serves the files of `static_root`; https uses the
    certificate and key files `tls_files`)."""
    path = check(layout, name, mode)
    if name == H2O:
        threads = int(cell.get("threads", 1))
        conns = int(cell.get("connections", cell.get("concurrency", 0))) + HEADROOM
        tls = _need_tls(tls_files) if mode == "https" else None
        root = _need_root(static_root) if mode == "http-static" else None
        conf = write_h2o_conf(tmpdir, port, threads, conns, root, tls)
        return ServerSpec(name, mode, [path, "-m", "worker", "-c", conf], path, ready_line=False, tmpdir=tmpdir)
    if mode == "https":
        cert, key = _need_tls(tls_files)
        if name == "nginx":
            conf = write_nginx_conf(tmpdir, port, int(cell.get("threads", 1)),
                                    int(cell.get("connections", cell.get("concurrency", 0))) + HEADROOM,
                                    tls=(cert, key))
            return ServerSpec(name, mode, [path, "-p", tmpdir, "-c", conf, "-e", os.path.join(tmpdir, "error.log")],
                              path, ready_line=False, children=int(cell.get("threads", 1)), tmpdir=tmpdir)
        if name in TOKIO:
            argv = [path, "--mode", "http", "--port", str(port), "--threads", str(cell.get("threads", 1)),
                    "--tls-cert", cert, "--tls-key", key] + PEERS[name][1]
            return ServerSpec(name, mode, argv, path)
        argv = [path, "--port", str(port), "--threads", str(cell.get("threads", 1)), "--backend", RINGIO[name],
                "--tls-cert", cert, "--tls-key", key] + _http_args(mode, cell, static_root)
        return ServerSpec(name, mode, argv, path)
    threads = int(cell.get("threads", 1))
    if name in HOOKED or name == DYCO:
        if threads != 1:
            raise Unavailable(f"{name} runs one thread")
        argv = [path, "--port", str(port)] + (["--backend", HOOKED[name]] if name in HOOKED else [])
        return ServerSpec(name, mode, argv, path)
    if name in RINGIO:
        backend = RINGIO[name]
        if mode == "pong":
            argv = [path, str(port), str(threads), str(cell["blocksize"]), str(cell["sessions"]),
                    "--backend", backend, "--keep-running"]
        else:
            argv = [path, "--port", str(port), "--threads", str(threads), "--backend", backend]
            argv += _http_args(mode, cell, static_root)
        return ServerSpec(name, mode, argv, path)
    if name in VARIANTS:
        backend, extra, _ = VARIANTS[name]
        if mode == "pong":
            argv = [path, str(port), str(threads), str(cell["blocksize"]), str(cell["sessions"]),
                    "--backend", backend, "--keep-running"] + extra
        else:
            argv = [path, "--port", str(port), "--threads", str(threads), "--backend", backend] + extra
            argv += _http_args(mode, cell, static_root)
        return ServerSpec(name, mode, argv, path, env=dict(VARIANT_ENV.get(name, {})))
    if name == URING_EXEC:
        # <port> <threads> <blocksize> <sessions>; it prints nothing until it ends, and
        # it blocks every signal but SIGINT, which it does not act on either.
        argv = [path, str(port), str(threads), str(cell["blocksize"]), str(URING_EXEC_SESSIONS)]
        return ServerSpec(name, mode, argv, path, ready_line=False, kill_only=True)
    if mode == "ws" and name in PEERS:
        if name == "beast":
            argv = [path, "--mode", "echo", "--port", str(port), "--threads", str(threads)]
        else:
            argv = [path, "--mode", "ws", "--port", str(port), "--threads", str(threads)] + PEERS[name][1]
        return ServerSpec(name, mode, argv, path)
    if name in PEERS:
        argv = [path, "--mode", mode, "--port", str(port), "--threads", str(threads)]
        if mode == "pong":
            argv += ["--block", str(cell["blocksize"])]
        return ServerSpec(name, mode, argv + PEERS[name][1], path)
    root = _need_root(static_root) if mode == "http-static" else None
    conf = write_nginx_conf(tmpdir, port, threads, int(cell.get("connections", 0)) + HEADROOM, root)
    argv = [path, "-p", tmpdir, "-c", conf, "-e", os.path.join(tmpdir, "error.log")]
    return ServerSpec(name, mode, argv, path, ready_line=False, children=threads, tmpdir=tmpdir)


NGINX_CONF = """\
# Generated by bench/run: every path lives in this directory.
worker_processes {threads};
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile {nofile};
events {{
    worker_connections {conns};
}}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 1000000;{static}
    server {{
        listen 127.0.0.1:{port} reuseport{ssl};{tls}
        location / {{
{location}
        }}
    }}
}}
"""
HELLO_LOCATION = """\
            default_type text/plain;
            return 200 "Hello world!";"""
# http-static: the files of the root, sent with sendfile(2) as nginx is
# usually deployed for static files.
STATIC_LOCATION = """\
            root {root};"""


# https: the runner's certificate; TLS 1.2 and 1.3, tickets on, OpenSSL's default
# TLS 1.3 suites (what ringio's http_server offers too).
TLS_SERVER = """
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_tickets on;"""


def nginx_conf(dirpath, port, threads, nofile=65536, conns=0, root=None, tls=None):
    """nginx.conf for the http mode, or with `root` for http-static, or with
    `tls` = (cert, key) for https.  Each worker gets at least `conns`
    connections (within the open-files limit): nginx counts its listener
    among them and turns away the rest."""
    worker_conns = max(1024, nofile // 2, min(conns, nofile - HEADROOM))
    location = STATIC_LOCATION.format(root=root) if root else HELLO_LOCATION
    static = "\n    sendfile on;" if root else ""
    return NGINX_CONF.format(dir=dirpath, port=port, threads=threads, nofile=nofile, conns=worker_conns,
                             location=location, static=static, ssl=" ssl" if tls else "",
                             tls=TLS_SERVER.format(cert=tls[0], key=tls[1]) if tls else "")


def write_nginx_conf(dirpath, port, threads, conns=0, root=None, tls=None):
    import resource
    nofile = max(1024, min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 20))
    path = os.path.join(dirpath, "nginx.conf")
    with open(path, "w") as f:
        f.write(nginx_conf(dirpath, port, threads, nofile, conns, root, tls))
    return path


# h2o: the hello body is a 12-byte file sent by its file handler (its fastest way to
# answer with a fixed body; an mruby handler answers about 0.8x as many requests);
# http-static serves the root's files; https the runner's certificate, TLS 1.2 and 1.3.
H2O_CONF = """\
# Generated by bench/run: every path lives in this directory.
user: {user}
num-threads: {threads}
max-connections: {conns}
error-log: {dir}/error.log
listen:
  host: 127.0.0.1
  port: {port}{tls}
hosts:
  default:
    paths:
      /:
        {handler}
"""
H2O_TLS = """
  ssl:
    certificate-file: {cert}
    key-file: {key}
    minimum-version: TLSv1.2"""
HELLO_BODY = b"Hello world!"


def h2o_conf(dirpath, port, threads, conns=0, root=None, tls=None, user="root"):
    """h2o's configuration for the http mode (the hello file in `dirpath`), or with
    `root` for http-static, or with `tls` = (cert, key) for https."""
    handler = f"file.dir: {root}" if root else f"file.file: {os.path.join(dirpath, 'hello')}"
    return H2O_CONF.format(user=user, threads=threads, conns=max(1024, conns), dir=dirpath, port=port,
                           tls=H2O_TLS.format(cert=tls[0], key=tls[1]) if tls else "", handler=handler)


def write_h2o_conf(dirpath, port, threads, conns=0, root=None, tls=None):
    import pwd
    # h2o run as root switches to the user named here (by default nobody): the
    # runner's own user, which can read the run's files.
    user = pwd.getpwuid(os.getuid()).pw_name
    if not root:
        with open(os.path.join(dirpath, "hello"), "wb") as f:
            f.write(HELLO_BODY)
    path = os.path.join(dirpath, "h2o.conf")
    with open(path, "w") as f:
        f.write(h2o_conf(dirpath, port, threads, conns, root, tls, user))
    return path
