#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Correctness clients for tokio_server, used by check.sh.

usage: check_client.py echo|pong|http PORT [--block B]

Talks only to 127.0.0.1, every socket has a timeout, and every loop is
bounded, so a broken server makes a check fail rather than hang.
Exits 0 when every check passes, 1 otherwise.
"""

import argparse
import os
import random
import socket
import struct
import sys
import threading
import time

HOST = "127.0.0.1"
TIMEOUT = 30.0

RESP = (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n"
        b"\r\nHello world!")
RESP_CLOSE = (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n"
              b"Connection: close\r\n\r\nHello world!")
RESP_KEEP_10 = (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n"
                b"Connection: keep-alive\r\n\r\nHello world!")
GET11 = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: check\r\n\r\n"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def connect(port):
    s = socket.create_connection((HOST, port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s, n):
    chunks = []
    got = 0
    while got < n:
        c = s.recv(min(n - got, 1 << 20))
        if not c:
            break
        chunks.append(c)
        got += len(c)
    return b"".join(chunks)


def recv_until_eof(s, limit=1 << 20):
    chunks = []
    got = 0
    while got < limit:
        c = s.recv(65536)
        if not c:
            break
        chunks.append(c)
        got += len(c)
    return b"".join(chunks)


def reset_close(s):
    """Close with an RST instead of a FIN."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def payload_sizes(rng, count):
    # Log-uniform between 1 byte and 1 MiB, always including both ends.
    sizes = [1, 1 << 20]
    while len(sizes) < count:
        sizes.append(max(1, int(2 ** rng.uniform(0, 20))))
    rng.shuffle(sizes)
    return sizes


def check_echo(port, conns=50, per_conn=4):
    total = [0]
    lock = threading.Lock()

    def one(idx):
        rng = random.Random(1000 + idx)
        try:
            with connect(port) as s:
                for size in payload_sizes(rng, per_conn):
                    data = os.urandom(size)
                    err = []

                    def send():
                        try:
                            s.sendall(data)
                        except OSError as e:
                            err.append(e)

                    t = threading.Thread(target=send)
                    t.start()
                    back = recv_exact(s, size)
                    t.join(TIMEOUT)
                    if err:
                        fail(f"echo conn {idx}: send failed: {err[0]}")
                        return
                    if back != data:
                        fail(f"echo conn {idx}: {size}-byte payload came back "
                             f"as {len(back)} bytes (mismatch)")
                        return
                    with lock:
                        total[0] += size
        except OSError as e:
            fail(f"echo conn {idx}: {e}")

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    dt = time.monotonic() - t0
    print(f"echo: {conns} connections, {total[0]} bytes echoed and compared "
          f"in {dt:.2f}s", flush=True)

    # A peer that resets mid-stream must not take the server down.
    s = connect(port)
    s.sendall(os.urandom(200000))
    reset_close(s)
    time.sleep(0.2)
    with connect(port) as s:
        s.sendall(b"still alive")
        if recv_exact(s, 11) != b"still alive":
            fail("echo: server did not answer after a peer reset")


def check_pong(port, block, conns=20, rounds=200):
    done = [0]
    lock = threading.Lock()

    def one(idx):
        rng = random.Random(2000 + idx)
        try:
            with connect(port) as s:
                for r in range(rounds):
                    data = rng.randbytes(block)
                    if r % 10 == 3:
                        # Send one block in uneven pieces: the server must
                        # wait for all of it before answering.
                        cut1 = rng.randrange(1, block) if block > 1 else 1
                        s.sendall(data[:cut1])
                        time.sleep(0.002)
                        s.sendall(data[cut1:])
                    else:
                        s.sendall(data)
                    back = recv_exact(s, block)
                    if back != data:
                        fail(f"pong conn {idx} round {r}: block mismatch "
                             f"({len(back)} bytes back)")
                        return
                with lock:
                    done[0] += rounds
        except OSError as e:
            fail(f"pong conn {idx}: {e}")

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    dt = time.monotonic() - t0
    print(f"pong: {conns} connections x {rounds} blocks of {block} bytes, "
          f"{done[0]} round trips verified in {dt:.2f}s", flush=True)

    # Half a block then EOF: the server answers nothing and closes.
    with connect(port) as s:
        s.sendall(b"x" * max(1, block // 2))
        s.shutdown(socket.SHUT_WR)
        rest = recv_until_eof(s)
        if block > 1 and rest:
            fail(f"pong: partial block got {len(rest)} bytes back")
    # Half a block then RST.
    s = connect(port)
    s.sendall(b"y" * max(1, block // 2))
    reset_close(s)
    time.sleep(0.2)
    with connect(port) as s:
        data = os.urandom(block)
        s.sendall(data)
        if recv_exact(s, block) != data:
            fail("pong: server did not answer after a peer reset")


def check_http(port):
    # 100 pipelined requests in one send -> 100 responses, in order.
    with connect(port) as s:
        s.sendall(GET11 * 100)
        got = recv_exact(s, len(RESP) * 100)
        if got != RESP * 100:
            fail(f"http: pipelined 100 requests gave {got.count(RESP)} "
                 f"exact responses in {len(got)} bytes")
        else:
            print("http: 100 pipelined requests -> 100 exact responses", flush=True)
        # The connection is still usable afterwards.
        s.sendall(GET11)
        if recv_exact(s, len(RESP)) != RESP:
            fail("http: keep-alive connection unusable after the pipeline")

    # One request split over several sends, including inside the terminator.
    with connect(port) as s:
        req = GET11
        cuts = [3, 10, len(req) - 3, len(req) - 1]
        prev = 0
        for c in cuts + [len(req)]:
            s.sendall(req[prev:c])
            prev = c
            time.sleep(0.02)
        if recv_exact(s, len(RESP)) != RESP:
            fail("http: split request not answered exactly")
        else:
            print("http: request split across 5 sends answered", flush=True)
        # One and a half requests, then the rest.
        s.sendall(GET11 + GET11[:7])
        time.sleep(0.02)
        s.sendall(GET11[7:])
        if recv_exact(s, 2 * len(RESP)) != 2 * RESP:
            fail("http: request straddling two sends not answered")

    # HTTP/1.1 with Connection: close (mixed case) -> close response, then EOF.
    with connect(port) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nCONNECTION: Close\r\n\r\n")
        got = recv_until_eof(s)
        if got != RESP_CLOSE:
            fail(f"http: Connection: close got {got!r}")
        else:
            print("http: HTTP/1.1 Connection: close -> close header, then EOF", flush=True)

    # Pipelined keep-alive, keep-alive, close: two plain, one close, then EOF.
    with connect(port) as s:
        s.sendall(GET11 + GET11 + b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n")
        got = recv_until_eof(s)
        if got != RESP + RESP + RESP_CLOSE:
            fail(f"http: pipeline ending in close got {len(got)} bytes")

    # HTTP/1.0 without keep-alive -> response then EOF.
    with connect(port) as s:
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        got = recv_until_eof(s)
        if got != RESP:
            fail(f"http: HTTP/1.0 got {got!r}")
        else:
            print("http: HTTP/1.0 -> response, then EOF", flush=True)

    # HTTP/1.0 with keep-alive -> connection stays open.
    with connect(port) as s:
        req = b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"
        s.sendall(req)
        a = recv_exact(s, len(RESP_KEEP_10))
        s.sendall(req)
        b = recv_exact(s, len(RESP_KEEP_10))
        if a != RESP_KEEP_10 or b != RESP_KEEP_10:
            fail(f"http: HTTP/1.0 keep-alive got {a!r} / {b!r}")
        else:
            print("http: HTTP/1.0 keep-alive -> two requests on one connection", flush=True)

    # A head over 8 KiB without a blank line -> the server closes.
    with connect(port) as s:
        s.settimeout(10)
        try:
            s.sendall(b"GET / HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 9000 + b"\r\n")
            got = recv_until_eof(s)
            if got:
                fail(f"http: oversized head got {len(got)} bytes back")
            else:
                print("http: head over 8 KiB -> connection closed", flush=True)
        except ConnectionResetError:
            print("http: head over 8 KiB -> connection reset", flush=True)
        except socket.timeout:
            fail("http: oversized head left the connection open")

    # A peer that resets with requests in flight must not hurt the server.
    s = connect(port)
    s.sendall(GET11 * 50)
    reset_close(s)
    time.sleep(0.2)
    with connect(port) as s:
        s.sendall(GET11)
        if recv_exact(s, len(RESP)) != RESP:
            fail("http: server did not answer after a peer reset")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["echo", "pong", "http"])
    ap.add_argument("port", type=int)
    ap.add_argument("--block", type=int, default=16384)
    a = ap.parse_args()
    if a.mode == "echo":
        check_echo(a.port)
    elif a.mode == "pong":
        check_pong(a.port, a.block)
    else:
        check_http(a.port)
    if failures:
        print(f"{a.mode}: {len(failures)} failure(s)", flush=True)
        sys.exit(1)
    print(f"{a.mode}: ok", flush=True)


if __name__ == "__main__":
    main()
