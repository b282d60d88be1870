#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Protocol clients for check_peers.sh: each subcommand exercises one mode of
a peer server on 127.0.0.1, exits 0 when every byte came back as the contract
says and 1 otherwise. Every socket has a timeout, so a stuck server fails the
check instead of hanging it."""

import argparse
import os
import random
import socket
import sys
import threading
import time

HOST = "127.0.0.1"
TIMEOUT = 20.0
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\n"
            b"Hello world!")
CLOSE_RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n"
                  b"Connection: close\r\n\r\nHello world!")
REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def connect(port):
    s = socket.create_connection((HOST, port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exactly(s, n):
    chunks, got = [], 0
    while got < n:
        chunk = s.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError(f"connection closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_until_close(s):
    chunks = []
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def run_parallel(count, work):
    """Runs work(i) on `count` threads; returns the list of errors."""
    errors = []

    def wrapper(i):
        try:
            work(i)
        except Exception as e:  # reported below, the check fails
            errors.append(f"connection {i}: {e!r}")

    threads = [threading.Thread(target=wrapper, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def check_echo(args):
    """Random payloads of 1 byte .. 1 MiB per connection, sent while the echo
    is read back, compared byte for byte."""
    total = [0]
    lock = threading.Lock()

    def work(i):
        rng = random.Random(i)
        sizes = [1, 1 << 20] + [int(2 ** rng.uniform(0, 20)) for _ in range(args.payloads)]
        with connect(args.port) as s:
            for size in sizes:
                payload = os.urandom(size)
                sender = threading.Thread(target=s.sendall, args=(payload,))
                sender.start()
                back = recv_exactly(s, size)
                sender.join()
                if back != payload:
                    raise ValueError(f"echo of {size} bytes differs")
                with lock:
                    total[0] += size

    start = time.monotonic()
    errors = run_parallel(args.conns, work)
    elapsed = time.monotonic() - start
    print(f"echo: {args.conns} connections, {total[0] / 2**20:.1f} MiB echoed "
          f"in {elapsed:.2f}s")
    return errors


def check_stream(args):
    """One connection streams for `seconds` while reading the echo: the rate
    is a rough figure (the Python client is the bottleneck)."""
    block = os.urandom(1 << 18)
    sent = [0]
    stop = time.monotonic() + args.seconds
    with connect(args.port) as s:
        def send():
            while time.monotonic() < stop:
                s.sendall(block)
                sent[0] += len(block)
            s.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        start = time.monotonic()
        sender.start()
        received = 0
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            received += len(chunk)
        sender.join()
        elapsed = time.monotonic() - start
    print(f"stream: {received / elapsed / 2**30:.2f} GiB/s echoed over one connection")
    if received != sent[0]:
        return [f"sent {sent[0]} bytes, got {received} back"]
    return []


def check_pong(args):
    """Blocks of `block` bytes, each sent in pieces, must come back whole."""
    rounds = [0]
    lock = threading.Lock()

    def work(i):
        rng = random.Random(i)
        with connect(args.port) as s:
            for _ in range(args.rounds):
                block = os.urandom(args.block)
                # Short writes on purpose, so the server has to assemble the block.
                cut = rng.randrange(1, args.block) if args.block > 1 else 1
                s.sendall(block[:cut])
                s.sendall(block[cut:])
                if recv_exactly(s, args.block) != block:
                    raise ValueError("pong block differs")
                with lock:
                    rounds[0] += 1

    start = time.monotonic()
    errors = run_parallel(args.conns, work)
    elapsed = time.monotonic() - start
    print(f"pong: {rounds[0]} round trips of {args.block} bytes over {args.conns} "
          f"connections, {rounds[0] / elapsed:.0f}/s")
    return errors


def expect(errors, what, got, want):
    if got != want:
        errors.append(f"{what}: got {got[:200]!r}... ({len(got)} bytes), "
                      f"want {want[:200]!r}... ({len(want)} bytes)")


def check_http(args):
    """Framing cases that load generators do not cover."""
    errors = []
    port = args.port

    with connect(port) as s:  # 100 pipelined requests in one send
        s.sendall(REQUEST * 100)
        expect(errors, "pipelined", recv_exactly(s, len(RESPONSE) * 100), RESPONSE * 100)

    with connect(port) as s:  # one request split over several sends
        for piece in (REQUEST[:5], REQUEST[5:20], REQUEST[20:-1], REQUEST[-1:]):
            s.sendall(piece)
            time.sleep(0.02)
        expect(errors, "split", recv_exactly(s, len(RESPONSE)), RESPONSE)
        s.sendall(REQUEST)  # still open: keep-alive by default
        expect(errors, "keep-alive", recv_exactly(s, len(RESPONSE)), RESPONSE)

    with connect(port) as s:  # HTTP/1.1 Connection: close, after a pipelined one
        s.sendall(REQUEST + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        expect(errors, "connection close", recv_until_close(s), RESPONSE + CLOSE_RESPONSE)

    with connect(port) as s:  # HTTP/1.0 closes by default
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        expect(errors, "http/1.0", recv_until_close(s), RESPONSE)

    with connect(port) as s:  # HTTP/1.0 keep-alive stays open
        s.sendall(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n" * 2)
        data = recv_exactly(s, 2 * (len(RESPONSE) + len(b"Connection: keep-alive\r\n")))
        if data.count(b"Hello world!") != 2 or b"Connection: keep-alive" not in data:
            errors.append(f"http/1.0 keep-alive: got {data!r}")

    with connect(port) as s:  # an endless request line is cut off
        try:
            s.sendall(b"GET /" + b"a" * 9000)
            data = recv_until_close(s)
        except OSError:  # reset or broken pipe: closed with the request unread
            data = b""
        expect(errors, "oversized request", data, b"")

    print(f"http: pipelining, split, keep-alive, close and oversize cases "
          f"{'ok' if not errors else 'FAILED'}")
    return errors


def check_abuse(args):
    """Clients that reset or vanish mid-request; the server must survive."""
    for i in range(args.conns):
        s = connect(args.port)
        s.sendall(os.urandom(1 + i * 997 % 200000))
        if i % 2:  # abortive close: RST instead of FIN
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    print(f"abuse: {args.conns} connections reset or closed mid-stream")
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("check", choices=["echo", "stream", "pong", "http", "abuse"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--conns", type=int, default=50)
    parser.add_argument("--payloads", type=int, default=4)
    parser.add_argument("--block", type=int, default=16384)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    checks = {"echo": check_echo, "stream": check_stream, "pong": check_pong,
              "http": check_http, "abuse": check_abuse}
    try:
        errors = checks[args.check](args)
    except Exception as e:
        errors = [repr(e)]
    for error in errors[:10]:
        print(f"  FAIL {args.check}: {error}", file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
