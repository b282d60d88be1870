# SPDX-License-Identifier: Apache-2.0
# Restarts and ringio-top under hostile conditions, driven from restart_attack_tests:
#   restart_attack.py HTTP_SERVER ECHO_SERVER RINGIO_TOP SCENARIO
# Exit 0: the documented behaviour held; 1: it did not (the reason on stdout); 77: skipped.
# Every process is started in its own process group and stopped by its id on the way out.
import array
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HTTP, ECHO, TOP, SCENARIO = sys.argv[1:5]
PROCS = []
TMP = tempfile.mkdtemp(prefix="ringio-rattack-")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def spawn(argv, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    p = subprocess.Popen(argv, text=True, start_new_session=True, **kw)
    PROCS.append(p)
    return p


def stop(p, sig=signal.SIGTERM, wait=30):
    if p.poll() is None:
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass
    try:
        return p.wait(wait)
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        return None


def first_line(p, timeout=20):
    box = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return box[0] if box else None


def port_of(line):
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line or "")
    return int(m.group(1)) if m else 0


def stderr_of(p, timeout=5):
    try:
        _, err = p.communicate(timeout=timeout)
        return err
    except subprocess.TimeoutExpired:
        return "(still running)"


def get(port, path="/", timeout=5):
    return urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout).read()


def server(app, hs, extra=()):
    p = spawn([app, "--port", "0", "--handover-socket", hs, *extra])
    line = first_line(p)
    check(line, "%s did not start: %s" % (app, stderr_of(p) if p.poll() is not None else "no start-up line"))
    return p, port_of(line)


def receive_fds(s):
    msg, anc, _, _ = s.recvmsg(64, socket.CMSG_LEN(64 * 4))
    fds = array.array("i")
    for _, _, data in anc:
        fds.frombytes(data[: len(data) - len(data) % 4])
    return msg, list(fds)


# --- handover ----------------------------------------------------------------------


def handover_peer_takes_sockets_and_dies():
    # A successor that receives the sockets and dies before "ready": the running
    # process serves on (a failed deploy costs nothing), and a later restart works.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    for how in ("close", "garbage", "sigkill"):
        if how == "sigkill":
            code = ("import socket,array,os,signal;s=socket.socket(socket.AF_UNIX);s.connect(%r);"
                    "s.recvmsg(64,socket.CMSG_LEN(256));os.kill(os.getpid(),signal.SIGKILL)" % hs)
            c = spawn([sys.executable, "-c", code])
            c.wait(20)
        else:
            s = socket.socket(socket.AF_UNIX)
            s.connect(hs)
            s.settimeout(10)
            msg, fds = receive_fds(s)
            check(len(msg) == 16 and len(fds) == 1, "handover message: %r %r" % (msg, fds))
            for fd in fds:
                os.close(fd)
            if how == "garbage":
                s.sendall(b"\x00garbage that is not ready\n" * 50)
            s.close()
        time.sleep(0.5)
        check(old.poll() is None, "the running process exited after a successor (%s) failed" % how)
        check(get(port) == b"Hello world!", "no answer after a failed successor (%s)" % how)
    new, port2 = server(HTTP, hs)
    check(port2 == port, "the real successor serves port %d, not %d" % (port2, port))
    rc = stop(old, signal.SIG_DFL, 30) if False else old.wait(30)
    check(rc == 0, "the old process exited %r" % rc)
    check(get(port) == b"Hello world!", "the successor does not answer")


def handover_holder_blocks_nobody():
    # A client that connects to the handover socket and holds the connection without a
    # word: the running process still serves, and a real successor still takes over.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    holders = []
    s = socket.socket(socket.AF_UNIX)
    s.connect(hs)
    holders.append(s)
    time.sleep(0.3)
    check(get(port) == b"Hello world!", "no answer while the handover socket is held")
    t0 = time.time()
    new, port2 = server(HTTP, hs)
    check(port2 == port, "the successor serves another port")
    rc = old.wait(30)
    check(rc == 0, "the old process exited %r" % rc)
    check(time.time() - t0 < 15, "the takeover took %.1f s behind idle handover clients" % (time.time() - t0))
    check(get(port) == b"Hello world!", "the successor does not answer")


def two_successors_race():
    # Two new processes started at once against one running process: both end up
    # either serving the port or exiting non-zero; the port keeps answering; and the
    # handover socket names a live process that can be replaced again.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    a = spawn([HTTP, "--port", "0", "--handover-socket", hs])
    b = spawn([HTTP, "--port", "0", "--handover-socket", hs])
    la, lb = first_line(a), first_line(b)
    check(la or lb, "neither successor started: %s / %s" % (stderr_of(a), stderr_of(b)))
    check(old.wait(30) == 0, "the old process did not exit 0")
    for l in (la, lb):
        if l:
            check(port_of(l) == port, "a successor serves another port: %s" % l)
    for _ in range(20):
        check(get(port) == b"Hello world!", "no answer after two successors raced")
    c, portc = server(HTTP, hs)
    check(portc == port, "a third process serves another port")
    time.sleep(1)
    for _ in range(20):
        check(get(port) == b"Hello world!", "no answer after the third process took over")
    alive = [p for p in (a, b) if p.poll() is None]
    for p in alive:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            raise Failure("a successor still runs after the third took over: a process that is no longer "
                          "the handover peer keeps its listeners (stderr: %s)" % p.stderr.name)


def many_successors_race():
    # Rounds of five new processes started at once: each one either serves the port the
    # group serves or exits non-zero (none believes it is the first and binds another
    # port), the port answers after each round, and at the end one process owns the
    # handover socket while every other one has exited.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    live = [old]
    for rnd in range(3):
        racers = [spawn([HTTP, "--port", "0", "--handover-socket", hs]) for _ in range(5)]
        lines = [first_line(p, 40) for p in racers]
        for p, l in zip(racers, lines):
            if l:
                check(port_of(l) == port, "round %d: a successor serves another port: %s" % (rnd, l))
        check(any(lines), "round %d: no successor started" % rnd)
        for _ in range(10):
            check(get(port) == b"Hello world!", "round %d: no answer after the race" % rnd)
        live += [p for p, l in zip(racers, lines) if l]
    last, portl = server(HTTP, hs)
    check(portl == port, "the last process serves another port")
    for p in live:
        try:
            rc = p.wait(30)
        except subprocess.TimeoutExpired:
            raise Failure("a process still runs after the last one took over (it no longer owns the handover socket)")
        check(rc == 0, "a replaced process exited %r" % rc)
    check(get(port) == b"Hello world!", "the last process does not answer")


FAKE_OLD = """
import array, os, socket, struct, sys, time
path, how = sys.argv[1], sys.argv[2]
tcp = socket.socket(); tcp.bind(("127.0.0.1", 0)); tcp.listen(64)
u = socket.socket(socket.AF_UNIX); u.bind(path); u.listen(8)
print(tcp.getsockname()[1], flush=True)
c, _ = u.accept()
c.sendmsg([b"RINGIOLS" + struct.pack("<II", 1, 1)],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [tcp.fileno()]))])
c.settimeout(20)
got = c.recv(1)
print("ready" if got == b"R" else "no ready %r" % got, flush=True)
c.close()
if how == "dies":
    os._exit(0)
time.sleep(60)
"""


def predecessor_refuses_or_dies():
    # A running process that gives up on its successor after sending the sockets (as one
    # does when "ready" comes too late) serves on and keeps the path: the successor
    # must stop, exit non-zero and leave the path alone. One that dies instead before
    # confirming leaves the successor serving and owning the path.
    for how in ("refuses", "dies"):
        hs = TMP + "/fake-%s.sock" % how
        fake = spawn([sys.executable, "-c", FAKE_OLD, hs, how])
        port = int(first_line(fake))
        inode = os.stat(hs).st_ino
        new = spawn([HTTP, "--port", "0", "--handover-socket", hs])
        check((first_line(fake) or "").startswith("ready"), "the successor sent no ready (%s)" % how)
        if how == "refuses":
            try:
                rc = new.wait(20)
            except subprocess.TimeoutExpired:
                raise Failure("the successor serves on beside a predecessor that refused the handover")
            err = stderr_of(new)
            check(rc != 0, "the successor of a refusing predecessor exited 0")
            check("did not accept the handover" in err, "no reason given: %r" % err)
            check(os.stat(hs).st_ino == inode, "the successor took the path of a predecessor that serves on")
        else:
            line = first_line(new)
            check(line and port_of(line) == port, "the successor of a dead predecessor does not serve: %r" % line)
            check(get(port) == b"Hello world!", "no answer from the successor of a dead predecessor")
            check(os.stat(hs).st_ino != inode, "the successor does not own the path")
            n2, p2 = server(HTTP, hs)
            check(p2 == port, "the next process serves another port")
            check(new.wait(30) == 0, "the successor did not hand over in turn")


def path_is(kind):
    hs = TMP + "/h.sock"
    if kind == "file":
        open(hs, "w").write("not a socket")
    elif kind == "dir":
        os.mkdir(hs)
    elif kind == "long":
        hs = TMP + "/" + "x" * 200 + ".sock"
    p = spawn([HTTP, "--port", "0", "--handover-socket", hs])
    line = first_line(p)
    if line:
        # It serves: then the path must be a working handover socket.
        port = port_of(line)
        check(get(port) == b"Hello world!", "no answer")
        n, port2 = server(HTTP, hs)
        check(port2 == port, "a successor through %s serves another port" % kind)
        check(p.wait(30) == 0, "the old process did not hand over")
    else:
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            raise Failure("neither serving nor exiting with --handover-socket on a %s" % kind)
        err = stderr_of(p)
        check(rc != 0 and rc > 0, "exit %r without a start-up line (%s)" % (rc, err))
        check("handover" in err, "the error names no handover socket: %r" % err)


def path_regular_file():
    path_is("file")


def path_directory():
    path_is("dir")


def path_too_long():
    path_is("long")


def stale_socket_of_another_program():
    # PATH is a live Unix socket of some other program that accepts and says nothing
    # (or garbage): the new server must not hang forever nor take a bogus message.
    for behaviour in ("silent", "garbage"):
        hs = TMP + "/other-%s.sock" % behaviour
        code = ("import socket,time\ns=socket.socket(socket.AF_UNIX);s.bind(%r);s.listen(8)\n"
                "while True:\n c,_=s.accept()\n %s\n" %
                (hs, "time.sleep(60)" if behaviour == "silent" else "c.sendall(b'HTTP/1.0 200 OK\\r\\n\\r\\n'*4);time.sleep(60)"))
        other = spawn([sys.executable, "-c", code])
        for _ in range(100):
            if os.path.exists(hs):
                break
            time.sleep(0.05)
        p = spawn([HTTP, "--port", "0", "--handover-socket", hs])
        line = first_line(p, 30)
        if line:
            check(get(port_of(line)) == b"Hello world!", "serves nothing")
        else:
            try:
                rc = p.wait(5)
            except subprocess.TimeoutExpired:
                raise Failure("http_server neither serves nor exits after 30 s against a %s foreign socket" % behaviour)
            check(rc != 0, "exit 0 without serving")
        stop(p)
        stop(other)


def handover_under_wrk(n=10, extra=()):
    hs = TMP + "/h.sock"
    cur, port = server(HTTP, hs, extra)
    wrk = spawn(["/usr/bin/wrk", "-t2", "-c32", "-d120s", "--timeout", "10s", "http://127.0.0.1:%d/" % port])
    time.sleep(1)
    for i in range(n):
        nxt, p2 = server(HTTP, hs, extra)
        check(p2 == port, "restart %d: another port" % i)
        rc = cur.wait(30)
        check(rc == 0, "restart %d: the old process exited %r: %s" % (i, rc, stderr_of(cur)))
        cur = nxt
        time.sleep(0.3)
    time.sleep(1)
    wrk.send_signal(signal.SIGINT)
    out, _ = wrk.communicate(timeout=30)
    m = re.search(r"(\d+) requests in", out)
    check(m and int(m.group(1)) > 0, "wrk made no requests: %s" % out)
    check("Socket errors" not in out and "Non-2xx" not in out, "errors across %d restarts:\n%s" % (n, out))


def ten_handovers_under_wrk():
    handover_under_wrk(10)


def ten_handovers_under_wrk_threads():
    handover_under_wrk(10, ("--threads", "2"))


def fd_leak_across_restarts():
    hs = TMP + "/h.sock"
    cur, port = server(HTTP, hs)
    counts = []
    for i in range(6):
        get(port)
        time.sleep(0.3)
        counts.append(len(os.listdir("/proc/%d/fd" % cur.pid)))
        nxt, _ = server(HTTP, hs)
        check(cur.wait(30) == 0, "old did not exit")
        cur = nxt
    time.sleep(0.3)
    counts.append(len(os.listdir("/proc/%d/fd" % cur.pid)))
    check(max(counts[1:]) <= counts[1] and counts[-1] <= counts[1] + 0, "descriptors per generation grow: %r" % counts)
    fds = {f: os.readlink("/proc/%d/fd/%s" % (cur.pid, f)) for f in os.listdir("/proc/%d/fd" % cur.pid)}
    socks = [v for v in fds.values() if v.startswith("socket:")]
    check(len(socks) <= 4, "the sixth generation holds %d sockets: %r" % (len(socks), fds))


class RawWebSocket:
    def __init__(self, port, path):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" %
                       path.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = self.s.recv(1)
            check(d, "the WebSocket handshake got no answer")
            head += d
        check(head.startswith(b"HTTP/1.1 101"), "no 101: %r" % head)

    def send(self, text):
        b = text.encode()
        check(len(b) < 126, "short messages only")
        self.s.sendall(bytes([0x81, 0x80 | len(b)]) + b"\0\0\0\0" + b)

    def recv(self):
        try:
            h = self.s.recv(2)
            if len(h) < 2:
                return None
            n = h[1] & 0x7F
            data = b""
            while len(data) < n:
                d = self.s.recv(n - len(data))
                if not d:
                    return None
                data += d
            return data.decode(errors="replace") if h[0] & 0x0F == 1 else ("opcode %d" % (h[0] & 0x0F))
        except OSError as e:
            return "error: %s" % e


def upload_and_websocket_across_restart():
    # A request whose head is still arriving (sent slowly, across the handover) and a
    # WebSocket open while the server is replaced: both are served by the old process
    # within --drain-timeout (5 s); the response carries Connection: close.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    ws = RawWebSocket(port, "/ws/echo")
    ws.send("before")
    check(ws.recv() == "before", "ws echo before")
    new, _ = server(HTTP, hs)
    for i in range(10):
        s.sendall(b"X-Slow-%d: %s\r\n" % (i, b"y" * 100))
        time.sleep(0.1)
    ws.send("during")
    got = ws.recv()
    check(got == "during", "a WebSocket open across the handover no longer echoes: %r" % got)
    s.sendall(b"\r\n")
    s.settimeout(10)
    resp = s.recv(4096)
    check(resp.startswith(b"HTTP/1.1 200"), "a request arriving across the handover got %r" % resp[:80])
    check(b"onnection: close" in resp, "a response of the draining process lacks Connection: close: %r" % resp[:300])
    check(old.wait(30) == 0, "old exit")
    check(get(port) == b"Hello world!", "new serves")


def many_get(port, n=64):
    # n fresh connections (each lands on a listener of the SO_REUSEPORT group by its
    # hash): every one must be answered.
    bad = []
    for i in range(n):
        try:
            if get(port, timeout=3) != b"Hello world!":
                bad.append(i)
        except Exception as e:  # noqa: BLE001
            bad.append("%d: %s" % (i, e))
    return bad


def old_killed_mid_handover():
    # The running process is stopped, a successor connects, then the running process
    # is killed: the successor must not hang; if it starts, it serves the port.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs, ("--port-hint",) if False else ())
    os.kill(old.pid, signal.SIGSTOP)
    new = spawn([HTTP, "--port", str(port), "--handover-socket", hs])
    time.sleep(1)
    os.kill(old.pid, signal.SIGKILL)
    old.wait(10)
    line = first_line(new, 30)
    if line:
        check(port_of(line) == port, "serves another port: %s" % line)
        check(not many_get(port, 8), "the successor does not answer")
    else:
        try:
            rc = new.wait(10)
        except subprocess.TimeoutExpired:
            raise Failure("the successor hangs after the running process died mid-handover")
        check(rc != 0, "exit 0 without serving")


def handover_more_listeners_than_threads():
    # Four listeners (--threads 4) handed to a process started with --threads 1: the
    # loops are raised to their number, every listener of the group is accepted on.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs, ("--threads", "4"))
    new, p2 = server(HTTP, hs, ("--threads", "1"))
    check(p2 == port, "another port")
    check(old.wait(30) == 0, "old exit")
    bad = many_get(port)
    check(not bad, "connections not served after 4 listeners went to --threads 1: %r" % bad[:5])
    # And back: one listener to four threads.
    nxt, _ = server(HTTP, hs, ("--threads", "1"))
    check(new.wait(30) == 0, "exit")
    n4, _ = server(HTTP, hs, ("--threads", "4"))
    check(nxt.wait(30) == 0, "exit")
    bad = many_get(port)
    check(not bad, "connections not served after 1 listener went to --threads 4: %r" % bad[:5])


def handover_to_acceptor_dispatch():
    # Two reuseport listeners handed to a process with the acceptor dispatch (which
    # takes exactly one): it must either serve every listener or fail before "ready"
    # (the running process then serves on). Either way every connection is answered.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs, ("--threads", "2"))
    new = spawn([HTTP, "--port", "0", "--handover-socket", hs, "--threads", "2", "--dispatch", "acceptor"])
    line = first_line(new, 20)
    time.sleep(1.5)
    bad = many_get(port)
    check(not bad, "connections not served after a handover to the acceptor dispatch (successor %s): %r" %
          ("started" if line else "failed: " + stderr_of(new), bad[:5]))


def echo_connections_stay_with_old():
    # echo_server: a connection open across the handover keeps echoing on the old
    # process until --drain-timeout, then is closed; new connections go to the new one.
    hs = TMP + "/e.sock"
    old = spawn([ECHO, "--port", "0", "--handover-socket", hs, "--drain-timeout", "3"])
    port = port_of(first_line(old))
    check(port, "echo_server did not start")
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"one")
    check(c.recv(16) == b"one", "echo before")
    new = spawn([ECHO, "--port", "0", "--handover-socket", hs, "--drain-timeout", "3"])
    check(port_of(first_line(new)) == port, "the successor serves another port")
    t0 = time.time()
    c.sendall(b"two")
    check(c.recv(16) == b"two", "an echo connection open across the handover stopped echoing")
    d = socket.create_connection(("127.0.0.1", port), timeout=5)
    d.sendall(b"new")
    check(d.recv(16) == b"new", "a new connection is not echoed")
    c.settimeout(15)
    try:
        r = c.recv(16)
    except OSError:
        r = b""
    took = time.time() - t0
    check(r == b"", "the old connection got data: %r" % r)
    check(2 <= took <= 10, "the old connection closed after %.1f s, not --drain-timeout 3 s" % took)
    check(old.wait(10) == 0, "the old process did not exit 0")
    d.sendall(b"still")
    check(d.recv(16) == b"still", "the new process stopped echoing")


def idle_keepalive_closed_while_draining():
    # A keep-alive connection idle across the handover is closed by the draining process
    # about a second later; a request sent on a busy one gets Connection: close.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    idle = socket.create_connection(("127.0.0.1", port), timeout=5)
    busy = socket.create_connection(("127.0.0.1", port), timeout=5)
    for c in (idle, busy):
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        check(b"Hello world!" in c.recv(4096), "first answer")
    new, _ = server(HTTP, hs)
    t0 = time.time()
    # The new process prints its line once the old one said "draining"; the old one's
    # loops begin the drain a moment later (when they have closed their listeners): a
    # request in between is served as before. Within a second every answer says close.
    for _ in range(20):
        busy.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        r = busy.recv(4096)
        check(b"Hello world!" in r, "a request on a keep-alive connection during the drain: %r" % r)
        if b"onnection: close" in r:
            break
        time.sleep(0.05)
    check(b"onnection: close" in r, "no Connection: close while draining: %r" % r)
    idle.settimeout(10)
    try:
        got = idle.recv(4096)
    except OSError as e:
        got = str(e).encode()
    took = time.time() - t0
    check(got == b"", "the idle connection got %r" % got)
    check(took < 4.5, "the idle keep-alive connection was closed after %.1f s, not about 1 s" % took)
    check(old.wait(30) == 0, "old exit")


def old_signalled_while_draining_keeps_path():
    # The old process stopped by a signal during its drain does not remove PATH (it is
    # the new one's): a third process still takes over. The last one stopped removes it.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    keep = socket.create_connection(("127.0.0.1", port), timeout=5)
    keep.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")  # holds the drain
    new, _ = server(HTTP, hs)
    time.sleep(0.2)
    os.kill(old.pid, signal.SIGTERM)
    old.wait(30)
    check(os.path.exists(hs), "PATH was removed by the old process stopped during its drain")
    third, p3 = server(HTTP, hs)
    check(p3 == port, "a third process serves another port")
    check(new.wait(30) == 0, "the second did not hand over")
    check(stop(third) == 0, "the last one did not exit 0")
    check(not os.path.exists(hs), "the last process stopped by a signal left PATH behind")


def handover_65_threads():
    # More loops than one handover message carries (max_handover_listeners, 64): the
    # process must either refuse the option at start or be replaceable.
    hs = TMP + "/h.sock"
    old = spawn([HTTP, "--port", "0", "--threads", "65", "--handover-socket", hs])
    line = first_line(old, 60)
    if not line:
        rc = old.wait(10)
        check(rc == 2, "refused with exit %r, not 2" % rc)
        return
    port = port_of(line)
    new = spawn([HTTP, "--port", "0", "--threads", "2", "--handover-socket", hs])
    l2 = first_line(new, 30)
    check(l2 and port_of(l2) == port,
          "a process with 65 loops started with --handover-socket (start-up line printed) cannot be replaced: "
          "successor: %s; running process: %s" % (stderr_of(new).strip(), old.stderr.name if False else "")
          + read_stderr_now(old))
    check(old.wait(30) == 0, "old exit")


def read_stderr_now(p):
    stop(p)
    try:
        return p.stderr.read()
    except (OSError, ValueError):
        return ""


def top_live_view_across_server_restart():
    # The live view while its server stops and another takes the metrics port: the
    # last figures stay with the error below, and the view recovers.
    import shutil

    if not shutil.which("tmux"):
        print("tmux is not installed")
        sys.exit(77)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    mport = probe.getsockname()[1]
    probe.close()
    srv = spawn([HTTP, "--port", "0", "--metrics-port", str(mport)])
    check(first_line(srv), "no start-up line")
    sock = "ringio-rattack-live-%d" % os.getpid()

    def pane():
        return subprocess.run(["tmux", "-S", TMP + "/" + sock, "capture-pane", "-p"], capture_output=True, text=True).stdout

    try:
        subprocess.run(["tmux", "-S", TMP + "/" + sock, "new-session", "-d", "-x", "120", "-y", "30",
                        "%s --interval 200 %d; echo EXIT=$?; sleep 60" % (TOP, mport)], check=True)
        time.sleep(1.5)
        before = pane()
        check("total" in before, "no table: %r" % before)
        stop(srv)
        time.sleep(1.5)
        during = pane()
        check("EXIT=" not in during, "the live view exited when the server stopped: %r" % during)
        check("total" in during, "the last figures are gone while the server is down: %r" % during)
        check("refused" in during.lower() or "cannot" in during.lower() or "error" in during.lower(),
              "no error shown while the server is down: %r" % during)
        srv2 = spawn([HTTP, "--port", "0", "--metrics-port", str(mport)])
        check(first_line(srv2), "the second server did not start")
        time.sleep(2)
        after = pane()
        check("total" in after and "refused" not in after.lower() and "cannot" not in after.lower(),
              "the view did not recover: %r" % after)
        subprocess.run(["tmux", "-S", TMP + "/" + sock, "send-keys", "q"])
        deadline = time.time() + 10
        while time.time() < deadline and "EXIT=" not in pane():
            time.sleep(0.2)
        check("EXIT=0" in pane(), "q did not quit with 0: %r" % pane())
    finally:
        subprocess.run(["tmux", "-S", TMP + "/" + sock, "kill-server"], stderr=subprocess.DEVNULL)


def rapid_restarts_without_waiting_under_wrk():
    # Ten generations started one after the other as soon as the previous prints its
    # start-up line, while earlier ones still drain (a slow upload holds each drain):
    # wrk sees no error.
    hs = TMP + "/h.sock"
    gens = []
    cur, port = server(HTTP, hs, ("--drain-timeout", "3"))
    gens.append(cur)
    wrk = spawn(["/usr/bin/wrk", "-t2", "-c32", "-d120s", "--timeout", "10s", "http://127.0.0.1:%d/" % port])
    time.sleep(1)
    holders = []
    for i in range(10):
        h = socket.create_connection(("127.0.0.1", port), timeout=5)
        h.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
        holders.append(h)
        nxt, p2 = server(HTTP, hs, ("--drain-timeout", "3"))
        check(p2 == port, "generation %d serves another port" % i)
        gens.append(nxt)
    time.sleep(1)
    wrk.send_signal(signal.SIGINT)
    out, _ = wrk.communicate(timeout=30)
    for g in gens[:-1]:
        try:
            rc = g.wait(20)
        except subprocess.TimeoutExpired:
            raise Failure("a draining generation did not exit within 20 s")
        check(rc == 0, "a generation exited %r" % rc)
    m = re.search(r"(\d+) requests in", out)
    check(m and int(m.group(1)) > 0, "wrk made no requests: %s" % out)
    check("Socket errors" not in out and "Non-2xx" not in out, "errors across rapid restarts:\n%s" % out)


def echo_ten_handovers_under_churn():
    # echo_server replaced ten times while client threads open a connection per
    # session, send, read the echo and close: no session fails (a session that gets
    # neither its echo nor an end within 15 s was lost).
    hs = TMP + "/e.sock"
    cur = spawn([ECHO, "--port", "0", "--handover-socket", hs])
    port = port_of(first_line(cur))
    check(port, "echo_server did not start")
    failures, sessions = [], [0]
    done = threading.Event()

    def churn():
        while not done.is_set():
            stage = "connect"
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=float(os.environ.get("CHURN_TIMEOUT", "15")))
                stage = "echo"
                c.sendall(b"x" * 100)
                got = b""
                while len(got) < 100:
                    d = c.recv(100)
                    if not d:
                        break
                    got += d
                c.close()
                if got != b"x" * 100:
                    failures.append("short echo %d" % len(got))
                sessions[0] += 1
            except OSError as e:
                where = ""
                if stage == "echo":
                    lp = c.getsockname()[1]
                    where = subprocess.run(["ss", "-tnpi", "sport = :%d or dport = :%d" % (lp, lp)],
                                           capture_output=True, text=True).stdout
                    where += subprocess.run(["ss", "-tlnpe", "sport = :%d" % port], capture_output=True,
                                            text=True).stdout
                    gens = " ".join("%d%s" % (g.pid, "" if g.poll() is None else "(exited)") for g in generations)
                    where += " generations: " + gens
                failures.append("%s: %s %s" % (stage, e, where))

    generations = [cur]
    ts = [threading.Thread(target=churn, daemon=True) for _ in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    for i in range(10):
        nxt = spawn([ECHO, "--port", "0", "--handover-socket", hs])
        generations.append(nxt)
        check(port_of(first_line(nxt)) == port, "generation %d serves another port" % i)
        check(cur.wait(30) == 0, "generation %d did not exit 0" % i)
        cur = nxt
        time.sleep(0.2)
    done.set()
    for t in ts:
        t.join(10)
    check(sessions[0] > 0, "no session")
    check(not failures, "%d of %d sessions failed across ten handovers: %r" % (len(failures), sessions[0], failures[:5]))


def http_ten_handovers_under_churn():
    # http_server replaced ten times while client threads send one request per fresh
    # connection (Connection: close): every request is answered within 15 s.
    hs = TMP + "/h.sock"
    cur, port = server(HTTP, hs)
    failures, done, count = [], threading.Event(), [0]

    def churn():
        while not done.is_set():
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=15)
                c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                got = b""
                while True:
                    d = c.recv(4096)
                    if not d:
                        break
                    got += d
                c.close()
                if b"Hello world!" not in got:
                    failures.append("answer %r" % got[:60])
                count[0] += 1
            except OSError as e:
                failures.append("%s; listener: %s" % (e, subprocess.run(["ss", "-tlnp", "sport = :%d" % port],
                                                                        capture_output=True, text=True).stdout))

    ts = [threading.Thread(target=churn, daemon=True) for _ in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    for i in range(10):
        nxt, p2 = server(HTTP, hs)
        check(p2 == port, "generation %d serves another port" % i)
        check(cur.wait(30) == 0, "generation %d did not exit 0" % i)
        cur = nxt
        time.sleep(0.2)
    done.set()
    for t in ts:
        t.join(20)
    check(count[0] > 0, "no request")
    check(not failures, "%d of %d requests failed across ten handovers: %r" % (len(failures), count[0], failures[:3]))


def metrics_port_clash():
    # A successor given the same --metrics-port fails before "ready": the running
    # process serves on, and a correct successor still takes over.
    hs = TMP + "/h.sock"
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    mport = probe.getsockname()[1]
    probe.close()
    old, port = server(HTTP, hs, ("--metrics-port", str(mport)))
    bad = spawn([HTTP, "--port", "0", "--handover-socket", hs, "--metrics-port", str(mport)])
    line = first_line(bad, 20)
    try:
        rc = bad.wait(20)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc not in (None, 0), "a successor with a taken metrics port: exit %r (line %r)" % (rc, line))
    time.sleep(0.5)
    check(old.poll() is None, "the running process exited after the successor failed")
    check(not many_get(port, 16), "the running process stopped answering")
    good, p2 = server(HTTP, hs)
    check(p2 == port, "another port")
    check(old.wait(30) == 0, "old exit")
    check(not many_get(port, 16), "the successor does not answer")


def http_port_refused_with_handover():
    key, crt = TMP + "/k.pem", TMP + "/c.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                        "-days", "1", "-subj", "/CN=localhost"], capture_output=True)
    if r.returncode != 0:
        print("openssl cannot make a certificate")
        sys.exit(77)
    for opt in (("--handover-socket", TMP + "/h.sock"), ("--reuse-port",)):
        p = spawn([HTTP, "--port", "0", "--http-port", "0", "--tls-cert", crt, "--tls-key", key, *opt])
        line = first_line(p, 10)
        check(not line, "--http-port accepted with %s: %s" % (opt[0], line))
        check(p.wait(10) == 2, "exit not 2 for --http-port with %s" % opt[0])


def failed_successors_leak_nothing():
    # Fifty successors that take the sockets and go away: the running process's
    # descriptors do not grow.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    get(port)
    time.sleep(0.2)
    before = len(os.listdir("/proc/%d/fd" % old.pid))
    for _ in range(50):
        s = socket.socket(socket.AF_UNIX)
        s.connect(hs)
        s.settimeout(10)
        _, fds = receive_fds(s)
        for fd in fds:
            os.close(fd)
        s.close()
    time.sleep(1)
    after = len(os.listdir("/proc/%d/fd" % old.pid))
    check(after <= before, "descriptors of the running process grew from %d to %d after 50 failed successors" %
          (before, after))
    check(get(port) == b"Hello world!", "no answer")


def forged_handover_messages():
    # A program on PATH that sends forged handover messages: each is refused (the new
    # process exits non-zero within its timeout) and none serves a descriptor that is
    # not a listening stream socket.
    import struct

    hs = TMP + "/forged.sock"
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    filefd = os.open("/etc/hostname", os.O_RDONLY)
    good = b"RINGIOLS" + struct.pack("<II", 1, 1)
    cases = {
        "count 2, one fd": (b"RINGIOLS" + struct.pack("<II", 1, 2), [lst.fileno()]),
        "count 1, two fds": (good, [lst.fileno(), lst.fileno()]),
        "count 0": (b"RINGIOLS" + struct.pack("<II", 1, 0), []),
        "count 65": (b"RINGIOLS" + struct.pack("<II", 1, 65), [lst.fileno()]),
        "count 2^32-1": (b"RINGIOLS" + struct.pack("<II", 1, 0xFFFFFFFF), [lst.fileno()]),
        "version 2": (b"RINGIOLS" + struct.pack("<II", 2, 1), [lst.fileno()]),
        "bad magic": (b"RINGIOLX" + struct.pack("<II", 1, 1), [lst.fileno()]),
        "short header": (b"RINGIOLS" + struct.pack("<I", 1), [lst.fileno()]),
        "udp socket": (good, [udp.fileno()]),
        "regular file": (good, [filefd]),
        "no fds": (good, []),
    }
    problems = []
    for name, (msg, fds) in cases.items():
        try:
            os.unlink(hs)
        except FileNotFoundError:
            pass
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(hs)
        srv.listen(4)
        p = spawn([HTTP, "--port", "0", "--handover-socket", hs])
        srv.settimeout(10)
        try:
            c, _ = srv.accept()
        except OSError:
            problems.append("%s: no connection" % name)
            stop(p)
            continue
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
        c.sendmsg([msg], anc)
        line = first_line(p, 20)
        if line:
            problems.append("%s: served (%s)" % (name, line.strip()[:80]))
        else:
            try:
                rc = p.wait(10)
                if rc == 0:
                    problems.append("%s: exit 0" % name)
            except subprocess.TimeoutExpired:
                problems.append("%s: neither served nor exited" % name)
        print("%s: %s" % (name, stderr_of(p).strip()[:160]))
        stop(p)
        c.close()
        srv.close()
    check(not problems, "\n".join(problems))


def upgrade_on_keepalive_during_handover():
    # A WebSocket upgrade sent on a keep-alive connection opened before the handover,
    # once the successor has taken over: no request fails during a restart, so it is
    # answered 101 (served until --drain-timeout) or the connection closes unanswered
    # so that the client reconnects, never 503.
    hs = TMP + "/h.sock"
    old, port = server(HTTP, hs)
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    check(b"Hello world!" in c.recv(4096), "first answer")
    new, _ = server(HTTP, hs)
    time.sleep(0.2)
    c.sendall(b"GET /ws/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    try:
        r = c.recv(4096)
    except OSError:
        r = b""
    check(not r.startswith(b"HTTP/1.1 5"), "a WebSocket upgrade during the handover failed: %r" % r[:120])


# --- socket activation ---------------------------------------------------------------


def activation(env_extra, fd3, expect_exit2=True, args=()):
    pre = " ".join("%s=%s" % kv for kv in env_extra.items())
    cmd = 'export LISTEN_PID=$$ %s; exec "$0" "$@"' % pre
    p = spawn(["/bin/sh", "-c", cmd, HTTP, *args], pass_fds=(fd3,) if fd3 is not None else ())
    line = first_line(p, 10)
    if expect_exit2:
        if line:
            raise Failure("served with %r: %s" % (env_extra, line))
        rc = p.wait(10)
        err = stderr_of(p)
        check(rc == 2, "exit %r (not 2) for %r: %s" % (rc, env_extra, err))
        check(err.strip(), "no reason printed for %r" % env_extra)
        return None
    return p, line


def to_fd3(sock_or_fd):
    fd = sock_or_fd if isinstance(sock_or_fd, int) else sock_or_fd.fileno()
    if fd != 3:
        os.dup2(fd, 3)
    os.set_inheritable(3, True)
    return 3


def socket_activation_malformed():
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    fd = to_fd3(lst)
    for env in ({"LISTEN_FDS": "99999999999999999999999"}, {"LISTEN_FDS": "-1"}, {"LISTEN_FDS": "1x"},
                {"LISTEN_FDS": "2"}, {"LISTEN_FDS": "1", "LISTEN_FDNAMES": "a:b"},
                {"LISTEN_FDS": "4294967297"}, {"LISTEN_FDS": "0"}, {"LISTEN_FDS": ""},
                {"LISTEN_FDS": "1", "LISTEN_FDNAMES": "''"}, {"LISTEN_FDS": "1", "LISTEN_PID": "0"}):
        activation(env, fd)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    activation({"LISTEN_FDS": "1"}, to_fd3(udp))
    r, w = os.pipe()
    activation({"LISTEN_FDS": "1"}, to_fd3(r))
    unl = socket.socket()  # a stream socket that does not listen
    activation({"LISTEN_FDS": "1"}, to_fd3(unl))


def socket_activation_other_pid():
    # LISTEN_PID of another process: the sockets are not for this one; without --port
    # that is a bad argument (exit 2), with --port it binds its own.
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    fd = to_fd3(lst)
    p = spawn([HTTP], env=dict(os.environ, LISTEN_PID="1", LISTEN_FDS="1"), pass_fds=(fd,))
    line = first_line(p, 10)
    check(not line, "served sockets meant for pid 1: %s" % line)
    rc = p.wait(10)
    check(rc == 2, "exit %r without --port and sockets of another process" % rc)


def socket_activation_serves():
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    port = lst.getsockname()[1]
    fd = to_fd3(lst)
    p, line = activation({"LISTEN_FDS": "1", "LISTEN_FDNAMES": "web"}, fd, expect_exit2=False)
    check(line and port_of(line) == port, "activation start-up line: %r" % line)
    check(get(port) == b"Hello world!", "no answer")
    env = open("/proc/%d/environ" % p.pid, "rb").read()
    # environ of /proc shows the initial environment; the documented unset is
    # for child processes, checked through flags instead: FD_CLOEXEC on the socket.
    fds = os.listdir("/proc/%d/fd" % p.pid)
    check("3" in fds, "the activated socket is not at 3")
    flags = open("/proc/%d/fdinfo/3" % p.pid).read()
    m = re.search(r"flags:\s+(\d+)", flags)
    check(m and int(m.group(1), 8) & 0o2000000, "FD_CLOEXEC not set on the activated socket: %s" % flags)
    check(stop(p) == 0, "exit")


def reuse_port_mismatched():
    # Old without --reuse-port, new with it: the new one must fail (address in use),
    # the old one serves on.
    old = spawn([HTTP, "--port", "0"])
    port = port_of(first_line(old))
    new = spawn([HTTP, "--port", str(port), "--reuse-port"])
    line = first_line(new, 10)
    check(not line, "joined a port whose owner did not share it: %s" % line)
    check(new.wait(10) != 0, "exit 0")
    check(get(port) == b"Hello world!", "the running one stopped answering")
    # And --reuse-port with --handover-socket together on a second generation.
    stop(old)


# --- ringio-top ----------------------------------------------------------------------


class FakeMetrics:
    def __init__(self, handler):
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.port = self.s.getsockname()[1]
        self.handler = handler
        self.n = 0
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.n += 1
            threading.Thread(target=self.serve, args=(c, self.n), daemon=True).start()

    def serve(self, c, n):
        try:
            c.settimeout(30)
            data = b""
            while b"\r\n\r\n" not in data:
                d = c.recv(4096)
                if not d:
                    return
                data += d
            self.handler(c, n)
        except OSError:
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass


def page(ops, started=None, run_count=10, le01=10):
    started = ops + 3 if started is None else started
    return ("# TYPE ringio_operations_completed_total counter\n"
            'ringio_operations_completed_total{loop="0",kind="recv"} %d\n'
            "# TYPE ringio_operations_started_total counter\n"
            'ringio_operations_started_total{loop="0",kind="recv"} %d\n'
            "# TYPE ringio_operations_cancelled_total counter\n"
            'ringio_operations_cancelled_total{loop="0",kind="recv"} 0\n'
            "# TYPE ringio_operations_failed_total counter\n"
            'ringio_operations_failed_total{loop="0",kind="recv"} 0\n'
            "# TYPE ringio_loop_run_seconds histogram\n"
            'ringio_loop_run_seconds_bucket{loop="0",le="0.01"} %d\n'
            'ringio_loop_run_seconds_bucket{loop="0",le="+Inf"} %d\n'
            'ringio_loop_run_seconds_sum{loop="0"} 0.001\n'
            'ringio_loop_run_seconds_count{loop="0"} %d\n'
            "# TYPE ringio_loop_tasks_alive gauge\n"
            'ringio_loop_tasks_alive{loop="0"} 1\n'
            "# TYPE ringio_loop_bytes_received_total counter\n"
            'ringio_loop_bytes_received_total{loop="0"} 0\n'
            "# TYPE ringio_loop_bytes_sent_total counter\n"
            'ringio_loop_bytes_sent_total{loop="0"} 0\n' % (ops, started, le01, run_count, run_count))


def answer(c, body, status="200 OK"):
    b = body.encode() if isinstance(body, str) else body
    c.sendall(b"HTTP/1.1 " + status.encode() + b"\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(b) + b)


def top(args, timeout=30):
    p = spawn([TOP, *args])
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(p, signal.SIGKILL)
        raise Failure("ringio-top %s ran over %d s" % (" ".join(args), timeout))
    return p.returncode, out, err


def strict_json(text):
    # JSON as RFC 8259 defines it: NaN and Infinity are not numbers there.
    def bad(c):
        raise ValueError("not JSON: " + c)

    return json.loads(text, parse_constant=bad)


def top_counters_backwards():
    # The second read has smaller counters (a restarted process): rates count from
    # zero, never negative.
    f = FakeMetrics(lambda c, n: answer(c, page(1_000_000 if n == 1 else 50, run_count=500 if n == 1 else 5,
                                                le01=500 if n == 1 else 5)))
    rc, out, err = top(["--once", "--json", "--interval", "100", str(f.port)])
    check(rc == 0, "exit %d: %s" % (rc, err))
    j = strict_json(out)
    ops = j["total"]["operations_per_second"]
    check(ops >= 0, "negative rate after counters went down: %r" % ops)
    check(j["loops"][0]["stalls"] >= 0, "negative stalls: %r" % j["loops"][0]["stalls"])


def top_hostile_pages():
    cases = {
        "slow": lambda c, n: time.sleep(40),
        "html": lambda c, n: answer(c, "<html>hello</html>"),
        "404": lambda c, n: answer(c, "nope", "404 Not Found"),
        "garbage": lambda c, n: c.sendall(b"\x00\xff garbage\r\n\r\n" * 100),
        "closes": lambda c, n: None,
        "nan": lambda c, n: answer(c, page(10).replace(" 10\n", " NaN\n").replace(" 13\n", " +Inf\n")),
        "huge_number": lambda c, n: answer(c, page(10).replace(" 10\n", " 1e308\n")),
        "bad_lines": lambda c, n: answer(c, page(10) + 'ringio_operations_completed_total{loop="0",kind=} x\n{}{}\n'),
        "huge": lambda c, n: answer(c, page(10) + "# " + "a" * (64 << 20) + "\n"),
        "chunked_forever": lambda c, n: (c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
                                         [c.sendall(b"1000\r\n" + b"#" * 0x1000 + b"\r\n") or time.sleep(0.001)
                                          for _ in range(200000)]),
    }
    problems = []
    for name, h in cases.items():
        f = FakeMetrics(h)
        t0 = time.time()
        try:
            rc, out, err = top(["--once", "--json", "--interval", "100", str(f.port)], timeout=60)
        except Failure as e:
            problems.append("%s: %s" % (name, e))
            continue
        took = time.time() - t0
        if rc not in (0, 1):
            problems.append("%s: exit %d (%s)" % (name, rc, err[-300:]))
        elif rc == 1 and "ringio-top: cannot read" not in err and "has no ringio loop metrics" not in err:
            problems.append("%s: exit 1 without 'ringio-top: cannot read URL: REASON': %r" % (name, err[-300:]))
        elif rc == 0:
            try:
                strict_json(out)
            except ValueError as e:
                problems.append("%s: --once --json printed no valid JSON (%s): %r" % (name, e, out[:300]))
        print("%s: rc %d in %.1f s: %s" % (name, rc, took, err.strip()[:200]))
    check(not problems, "\n".join(problems))


def top_bad_arguments():
    problems = []
    for args in (["--interval", "49", "1"], ["--interval", "3600001", "1"], ["--interval", "x", "1"],
                 ["--sort", "nope", "1"], ["--pid", "-3", "1"], ["--pid", "abc", "1"], [], ["1", "2"],
                 ["--json", "1"], ["70000"], ["http://"], ["host:"], [":99"], ["--bogus", "1"],
                 ["--interval"], ["--interval", "100 ", "1"], ["0"], ["--pid", "99999999999999999999", "1"]):
        p = spawn([TOP, *args], stdin=subprocess.DEVNULL)
        try:
            out, err = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            stop(p, signal.SIGKILL)
            problems.append("%r: ran on" % args)
            continue
        if p.returncode != 2:
            problems.append("%r: exit %d, not 2 (%s)" % (args, p.returncode, err.strip()[:120]))
        elif "usage" not in err:
            problems.append("%r: exit 2 without the usage" % args)
    check(not problems, "\n".join(problems))


def top_across_restart():
    # ringio-top --once against a server replaced through the handover during the
    # interval; and the live view under tmux while the server restarts under it.
    hs = TMP + "/h.sock"
    cur = spawn([HTTP, "--port", "0", "--handover-socket", hs, "--metrics-port", "0"])
    line = first_line(cur)
    mline = first_line(cur, 5)
    m = re.search(r"127\.0\.0\.1:(\d+)", (mline or "") if "metrics" in (mline or "") else "")
    if not m:
        m = re.search(r"metrics[^\n]*?:(\d+)", line or "")
    check(m, "no metrics port in %r / %r" % (line, mline))
    mport = int(m.group(1))
    t = top(["--once", "--json", "--interval", "2000", str(mport)], timeout=60)
    rc, out, err = t
    check(rc in (0, 1), "exit %d" % rc)
    if rc == 0:
        strict_json(out)


def tmux_odd_sizes():
    import shutil

    if not shutil.which("tmux"):
        print("tmux is not installed")
        sys.exit(77)
    p = spawn([HTTP, "--port", "0", "--metrics-port", "0"])
    l1 = first_line(p)
    text = l1 + (first_line(p, 3) or "")
    ports = re.findall(r"127\.0\.0\.1:(\d+)", text)
    check(len(ports) >= 2, "no metrics port: %r" % text)
    mport = ports[-1]
    sock = "ringio-rattack-%d" % os.getpid()
    problems = []
    try:
        for w, h in ((1, 1), (10, 3), (20, 5), (300, 2), (80, 24), (2, 100)):
            subprocess.run(["tmux", "-S", TMP + "/" + sock, "kill-server"], stderr=subprocess.DEVNULL)
            sock = "ringio-rattack-%d-%dx%d" % (os.getpid(), w, h)
            subprocess.run(["tmux", "-S", TMP + "/" + sock, "new-session", "-d", "-x", str(w), "-y", str(h),
                            "%s --interval 100 %s; echo EXIT=$?; sleep 30" % (TOP, mport)], check=True)
            time.sleep(1.0)
            subprocess.run(["tmux", "-S", TMP + "/" + sock, "resize-window", "-x", str(w + 7), "-y", str(h + 3)],
                           stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            subprocess.run(["tmux", "-S", TMP + "/" + sock, "send-keys", "q"])
            deadline = time.time() + 10
            pane = ""
            while time.time() < deadline:
                pane = subprocess.run(["tmux", "-S", TMP + "/" + sock, "capture-pane", "-p", "-J", "-S", "-50"],
                                      capture_output=True, text=True).stdout
                if "EXIT=" in pane.replace("\n", ""):
                    break
                time.sleep(0.2)
            flat = pane.replace("\n", "")
            mm = re.search(r"EXIT=(\d+)", flat)
            if not mm or mm.group(1) != "0":
                problems.append("%dx%d: %r" % (w, h, pane[-200:]))
    finally:
        subprocess.run(["tmux", "-S", TMP + "/" + sock, "kill-server"], stderr=subprocess.DEVNULL)
    check(not problems, "the live view at odd sizes did not quit with 0 on q:\n" + "\n".join(problems))


def overrun(signum, frame):
    raise Failure("the scenario ran over its time limit (signal %d)" % signum)


def main():
    fn = globals().get(SCENARIO)
    if fn is None:
        print("no scenario", SCENARIO)
        subprocess.run(["rm", "-rf", TMP])
        return 2
    signal.signal(signal.SIGALRM, overrun)
    signal.signal(signal.SIGTERM, overrun)
    signal.alarm(int(os.environ.get("RESTART_ATTACK_LIMIT", "240")))
    try:
        fn()
    except Failure as e:
        print("FAILED:", e)
        return 1
    finally:
        for p in PROCS:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                p.wait()
        subprocess.run(["rm", "-rf", TMP])
    print("ok")
    return 0


sys.exit(main())
