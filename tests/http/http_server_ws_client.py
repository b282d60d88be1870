#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# http_server_ws_client — Python's `websockets` package as the client of http_server's
# WebSocket echo (tests/http/http_server_test.cpp).
#   http_server_ws_client.py echo URL [CA_FILE]   text, binary and a long message echoed,
#                                                 then a normal close; prints "ok CODE"
#   http_server_ws_client.py hold URL             prints "open", then waits for the
#                                                 server to close; prints "closed CODE"
import asyncio
import ssl
import sys

import websockets


def tls(url, ca_file):
    return ssl.create_default_context(cafile=ca_file) if url.startswith("wss:") else None


async def echo(url, ca_file):
    async with websockets.connect(url, ssl=tls(url, ca_file), max_size=2 ** 22) as ws:
        await ws.send("héllo wörld")
        assert await ws.recv() == "héllo wörld"
        small = bytes(range(32))
        await ws.send(small)
        assert await ws.recv() == small
        blob = bytes(range(256)) * 1024  # 256 KiB: several reads and writes on each side
        await ws.send(blob)
        assert await ws.recv() == blob
        for i in range(100):  # ping-pong, as the benchmark does
            await ws.send(f"message {i}")
            assert await ws.recv() == f"message {i}"
    print(f"ok {ws.close_code}", flush=True)


async def hold(url):
    async with websockets.connect(url) as ws:
        await ws.send("x")
        assert await ws.recv() == "x"
        print("open", flush=True)
        try:
            await asyncio.wait_for(ws.recv(), 20)
        except websockets.ConnectionClosed:
            pass
    print(f"closed {ws.close_code}", flush=True)


def main():
    if sys.argv[1] == "echo":
        asyncio.run(echo(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
    else:
        asyncio.run(hold(sys.argv[2]))


if __name__ == "__main__":
    main()
