# SPDX-License-Identifier: Apache-2.0
"""The load of the memory and static-file scenarios, run as the client
`bench/clients/httpmem`: many HTTP connections from one process, with the
server's resident memory read at fixed moments of the load.

    httpmem idle --port P --pid PID --connections N [--idle-wait 1] [--after 1,3]
    httpmem echo-idle --port P --pid PID --connections N [--idle-wait 1] [--after 1,3]
    httpmem tls-idle --port P --pid PID --connections N [--idle-wait 1] [--after 1,3]
    httpmem ws-idle --port P --pid PID --connections N --path /ws/echo [--idle-wait 1] [--after 1,3]
    httpmem slow --port P --pid PID --connections M --path /1MiB.bin --seconds 3 [--rcvbuf 4096]
                 [--chunk 4096] [--tick 0.1] [--after 1,3]
    httpmem download --port P --path /256MiB.bin --duration D

It prints one `RESULT {json}` line, like the C++ clients.  The server's RSS
is VmRSS summed over the process tree of --pid (nginx: master and workers),
read from /proc; the client runs on other CPUs and reads it without stopping
the server.
"""
import argparse
import errno
import json
import os
import selectors
import socket
import ssl
import sys
import time

from . import measure

HOST = "127.0.0.1"
WINDOW = 256  # connections being opened at once: stays far below the listen backlog
SAMPLE_S = 0.1  # how often RSS is read while connections are being opened or read


def parse_vmrss(text):
    """VmRSS in KiB from the text of /proc/PID/status (None: no such line,
    as for a zombie)."""
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def rss_kib(pids):
    """Summed VmRSS of the processes that still exist."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += parse_vmrss(f.read()) or 0
        except OSError:
            pass
    return total


class ResponseError(Exception):
    pass


def parse_head(buf, upgrade=False):
    """(status, head_bytes, content_length) once `buf` holds a whole response
    head, else None.  A response without Content-Length is an error: every
    server here sends one for these requests; but a 101 to an `upgrade`
    request has no body (content_length 0)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > 16384:
            raise ResponseError("response head over 16 KiB")
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ResponseError(f"bad status line {lines[0][:60]!r}")
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        if upgrade and parts[1] == "101":
            return 101, end + 4, 0
        raise ResponseError("no Content-Length")
    return int(parts[1]), end + 4, length


def request_bytes(path):
    return f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()


ECHO_MESSAGE = b"ringio echo idle"  # 16 bytes, sent once by each echo-idle connection


def websocket_key():
    """A fresh Sec-WebSocket-Key: 16 random bytes in base64."""
    import base64
    return base64.b64encode(os.urandom(16)).decode()


def websocket_accept(key):
    """The Sec-WebSocket-Accept a server owes for `key` (RFC 6455 section 4.2.2)."""
    import base64
    import hashlib
    return base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()


def upgrade_request(path, key):
    return (f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def header_value(head, name):
    """The value of field `name` in a response head (bytes), or None."""
    for line in bytes(head).decode("latin-1").split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None


class Conn:
    __slots__ = ("sock", "state", "buf", "status", "need", "got", "echo", "ws_key")

    def __init__(self, sock, echo=False, ws_key=None):
        self.sock = sock
        self.ws_key = ws_key  # a WebSocket upgrade: the response is a 101 with its Accept
        self.state = "connect"
        self.buf = bytearray()
        self.echo = echo  # an echo server: the response is the request's bytes
        self.status = 200 if echo else None  # the response's status once its head arrived
        self.need = len(ECHO_MESSAGE) if echo else None  # bytes of the whole response, once known
        self.got = 0  # bytes received

    def take(self, data):
        """Counts received bytes; parses the head while it is incomplete."""
        self.got += len(data)
        if self.echo:
            self.buf += data
            if not ECHO_MESSAGE.startswith(bytes(self.buf[:len(ECHO_MESSAGE)])):
                raise ResponseError("bad echo")
        elif self.need is None:
            self.buf += data
            head = parse_head(self.buf, upgrade=self.ws_key is not None)
            if head:
                self.status, hlen, length = head
                self.need = hlen + length
                if self.ws_key is not None and self.status == 101:
                    if header_value(self.buf[:hlen], "Sec-WebSocket-Accept") != websocket_accept(self.ws_key):
                        raise ResponseError("bad Sec-WebSocket-Accept")
                    if len(self.buf) > hlen:
                        raise ResponseError("bytes after the 101")
                self.buf = bytearray()  # the body is counted, not kept

    def complete(self):
        return self.need is not None and self.got >= self.need


class Load:
    """Connections, their failures by kind, and the RSS readings."""

    def __init__(self, port, pid):
        self.port = port
        self.pids = measure.process_tree(pid) if pid else []
        self.failures = {}
        self.samples = []  # RSS readings taken while the load is on
        self.last_sample = 0.0

    def fail(self, conn, why):
        self.failures[why] = self.failures.get(why, 0) + 1
        if conn is not None:
            conn.state = "failed"
            conn.sock.close()

    def failed(self):
        return sum(self.failures.values())

    def rss(self):
        return rss_kib(self.pids)

    def sample(self, force=False):
        now = time.monotonic()
        if self.pids and (force or now - self.last_sample >= SAMPLE_S):
            self.last_sample = now
            self.samples.append(self.rss())

    def open(self, n, path, read_response, deadline, rcvbuf=None, mss=None, echo=False, tls=None, ws=False):
        """Opens n connections, WINDOW at a time, and sends each one request
        (`echo`: ECHO_MESSAGE instead of a GET of `path`; `ws`: a WebSocket
        upgrade of `path`, answered by a 101; `tls`: an ssl.SSLContext, a TLS
        handshake first); with `read_response`, reads each whole response.  Returns the ones that got that far; the others
        are in the failure counts."""
        sel = selectors.DefaultSelector()
        req = ECHO_MESSAGE if echo else request_bytes(path)
        done, started, busy = [], 0, 0
        while (started < n or busy) and time.monotonic() < deadline:
            while started < n and busy < WINDOW:
                started += 1
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                if rcvbuf:
                    # Before connect: the window the client offers is fixed at the handshake.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
                if mss:
                    # Announced in the SYN: the server's segments, and with them the
                    # send buffer the kernel sizes for it, are those of an Ethernet path
                    # rather than loopback's 64 KiB.
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
                key = websocket_key() if ws else None
                c = Conn(s, echo, key)
                err = s.connect_ex((HOST, self.port))
                if err not in (0, errno.EINPROGRESS):
                    self.fail(c, "connect")
                    continue
                sel.register(s, selectors.EVENT_WRITE, c)
                busy += 1
            for key, _ in sel.select(timeout=0.05):
                c = key.data
                if c.state == "connect" and tls is not None:
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        sel.unregister(c.sock)
                        busy -= 1
                        self.fail(c, "connect")
                        continue
                    sel.unregister(c.sock)
                    c.sock = tls.wrap_socket(c.sock, do_handshake_on_connect=False)
                    sel.register(c.sock, selectors.EVENT_WRITE, c)
                    c.state = "handshake"
                if c.state == "handshake":
                    try:
                        c.sock.do_handshake()
                    except ssl.SSLWantReadError:
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                        continue
                    except ssl.SSLWantWriteError:
                        sel.modify(c.sock, selectors.EVENT_WRITE, c)
                        continue
                    except OSError:
                        sel.unregister(c.sock)
                        busy -= 1
                        self.fail(c, "handshake")
                        continue
                    c.state = "connect"  # handshake done: send the request below
                if c.state == "connect":
                    err = 0 if tls is not None else c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    try:
                        out = upgrade_request(path, c.ws_key) if c.ws_key else req
                        if err or c.sock.send(out) != len(out):
                            raise OSError(err, "connect")
                    except OSError:
                        sel.unregister(c.sock)
                        busy -= 1
                        self.fail(c, "connect")
                        continue
                    if read_response:
                        c.state = "read"
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                        continue
                else:
                    try:
                        data = c.sock.recv(65536)
                        if not data:
                            raise ResponseError("closed")
                        c.take(data)
                    except ssl.SSLWantReadError:
                        continue  # a record not complete yet, or only a session ticket
                    except (OSError, ResponseError) as e:
                        sel.unregister(c.sock)
                        busy -= 1
                        self.fail(c, "closed" if str(e) == "closed" else "reset" if isinstance(e, OSError)
                                  else "bad response")
                        continue
                    if not c.complete():
                        continue
                    if c.status != (101 if ws else 200):
                        sel.unregister(c.sock)
                        busy -= 1
                        self.fail(c, f"status {c.status}")
                        continue
                sel.unregister(c.sock)
                busy -= 1
                c.state = "idle"
                done.append(c)
            self.sample()
        for key in list(sel.get_map().values()):
            self.fail(key.data, "timeout")
        if started < n:
            self.failures["not started"] = n - started
        sel.close()
        return done

    def after_close(self, conns, marks):
        """Closes the connections; RSS `marks` seconds after the close."""
        for c in conns:
            if c.state != "failed":
                c.sock.close()
        t0 = time.monotonic()
        out = {}
        for m in marks:
            time.sleep(max(0.0, t0 + m - time.monotonic()))
            out[f"after_{_name(m)}s"] = self.rss()
        return out


def _name(x):
    return str(int(x)) if float(x).is_integer() else str(x)


def client_tls_context():
    """TLS for tls-idle: any certificate (the runner's is self-signed), the
    client's default versions and ciphers."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def idle(a, echo=False, tls=False, ws=False):
    """N keep-alive connections, one request each (`echo`: one echoed
    message; `tls`: over TLS; `ws`: a WebSocket handshake on a.path), then
    idle; RSS before, with all of them idle, and after they close."""
    load = Load(a.port, a.pid)
    time.sleep(0.2)  # the runner's readiness probe has just closed
    before = load.rss()
    t0 = time.monotonic()
    conns = load.open(a.connections, a.path if ws else "/", True, t0 + a.open_timeout, echo=echo,
                      tls=client_tls_context() if tls else None, ws=ws)
    open_s = time.monotonic() - t0
    time.sleep(a.idle_wait)
    load.sample(force=True)
    loaded = load.samples[-1]
    rss = {"before": before, "loaded": loaded, "peak": max(load.samples)}
    rss.update(load.after_close(conns, a.after))
    return {"load": "echo-idle" if echo else "tls-idle" if tls else "ws-idle" if ws else "idle", "connections": a.connections, "ok": len(conns), "failed": load.failed(),
            "failures": load.failures, "open_s": round(open_s, 3), "rss_kib": rss, "processes": len(load.pids)}


def slow(a):
    """M connections with a small receive buffer, each asking for a large
    file and reading `chunk` bytes per `tick`: the server holds M responses
    in progress.  RSS before, its peak while they read, and after they close."""
    load = Load(a.port, a.pid)
    time.sleep(0.2)
    before = load.rss()
    t0 = time.monotonic()
    conns = load.open(a.connections, a.path, False, t0 + a.open_timeout, rcvbuf=a.rcvbuf, mss=a.mss)
    open_s = time.monotonic() - t0
    # The `seconds` of slow reading start once every response has begun (a
    # server busy filling socket buffers may take a while to reach the last
    # connection), so that the peak is taken with all M in progress.
    t1 = nxt = time.monotonic()
    end, heads_s = None, None
    while end is None or time.monotonic() < end:
        if end is None and (time.monotonic() >= t1 + a.head_timeout or
                            all(c.state == "failed" or c.status is not None for c in conns)):
            heads_s = time.monotonic() - t1
            end = time.monotonic() + a.seconds
        for c in conns:
            if c.state == "failed":
                continue
            try:
                data = c.sock.recv(a.chunk)
            except BlockingIOError:
                continue
            except OSError:
                load.fail(c, "reset")
                continue
            if not data:
                load.fail(c, "closed")
                continue
            try:
                c.take(data)
            except ResponseError:
                load.fail(c, "bad response")
        load.sample(force=True)
        nxt += a.tick
        time.sleep(max(0.0, nxt - time.monotonic()))
    # A connection whose response never started, or did not start with 200, failed.
    for c in conns:
        if c.state != "failed" and c.status != 200:
            load.fail(c, "no response" if c.status is None else f"status {c.status}")
    ok = [c for c in conns if c.state != "failed"]
    got = sum(c.got for c in ok)
    rss = {"before": before, "loaded": max(load.samples) if load.samples else None,
           "peak": max(load.samples) if load.samples else None}
    rss.update(load.after_close(conns, a.after))
    return {"load": "slow", "connections": a.connections, "ok": len(ok), "failed": load.failed(),
            "failures": load.failures, "open_s": round(open_s, 3), "heads_s": round(heads_s, 3), "bytes": got,
            "seconds": a.seconds,
            "rss_kib": rss, "processes": len(load.pids)}


def download(a):
    """One keep-alive connection downloading the file again and again for
    `duration` seconds; every byte received counts, a partial last one too."""
    s = socket.create_connection((HOST, a.port), timeout=10)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    req = request_bytes(a.path)
    total = complete = errors = 0
    t0 = time.monotonic()
    end = t0 + a.duration
    try:
        while time.monotonic() < end:
            s.sendall(req)
            c = Conn(s)
            while not c.complete() and time.monotonic() < end:
                want = len(buf) if c.need is None else min(len(buf), c.need - c.got)
                n = s.recv_into(view, want)
                if n == 0:
                    raise ResponseError("closed")
                if c.need is None:
                    c.take(view[:n])
                else:
                    c.got += n
            total += c.got
            if c.complete():
                complete += 1
                if c.status != 200:
                    errors += 1
                    break
    except (OSError, ResponseError):
        errors += 1
    secs = time.monotonic() - t0
    s.close()
    return {"load": "download", "bytes": total, "downloads": complete, "errors": errors,
            "seconds": round(secs, 4), "gb_per_s": total / secs / 1e9 if secs > 0 else 0.0}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="httpmem", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="load", required=True)
    for name in ("idle", "echo-idle", "tls-idle", "ws-idle", "slow", "download"):
        p = sub.add_parser(name)
        p.add_argument("--port", type=int, required=True)
        if name != "download":
            p.add_argument("--pid", type=int, required=True, help="the server: RSS of its process tree")
            p.add_argument("--connections", type=int, required=True)
            p.add_argument("--after", type=lambda t: [float(x) for x in t.split(",")], default=[1.0, 3.0],
                           help="RSS this many seconds after the close (default 1,3)")
            p.add_argument("--open-timeout", type=float, default=60.0, help="for opening all connections")
        if name not in ("idle", "echo-idle", "tls-idle"):
            p.add_argument("--path", required=True)
    sub.choices["idle"].add_argument("--idle-wait", type=float, default=1.0)
    sub.choices["ws-idle"].add_argument("--idle-wait", type=float, default=1.0)
    sub.choices["echo-idle"].add_argument("--idle-wait", type=float, default=1.0)
    sub.choices["tls-idle"].add_argument("--idle-wait", type=float, default=1.0)
    sl = sub.choices["slow"]
    sl.add_argument("--seconds", type=float, default=3.0)
    sl.add_argument("--rcvbuf", type=int, default=4096)
    sl.add_argument("--chunk", type=int, default=4096)
    sl.add_argument("--mss", type=int, default=1460, help="TCP_MAXSEG before connect (0: loopback's own)")
    sl.add_argument("--tick", type=float, default=0.1)
    sl.add_argument("--head-timeout", type=float, default=10.0,
                    help="longest wait for every response to begin before the timed reading")
    sub.choices["download"].add_argument("--duration", type=float, required=True)
    return ap.parse_args(argv)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    res = {"idle": idle, "echo-idle": lambda x: idle(x, echo=True),
           "tls-idle": lambda x: idle(x, tls=True), "ws-idle": lambda x: idle(x, ws=True), "slow": slow, "download": download}[a.load](a)
    print("RESULT " + json.dumps(res), flush=True)
    return 0  # failures are figures of the result, like wrk's socket errors


if __name__ == "__main__":
    sys.exit(main())
