#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# websocket_deflate_peer — Python's `websockets` package with permessage-deflate as the
# peer of ringio's compression tests (tests/http/websocket_deflate_test.cpp).
#   websocket_deflate_peer.py client URL VARIANT   echoes messages of several sizes through
#                                                  ringio's server, prints "ok EXTENSIONS"
#   websocket_deflate_peer.py server VARIANT       an echo server; prints its port, then
#                                                  serves until killed
# VARIANT: "default" (websockets' own offer), "no_context" (both no_context_takeover),
# "small_window" (server_max_window_bits=10, client_max_window_bits=9).
import asyncio
import random
import sys

import websockets
from websockets.extensions import permessage_deflate as pmd


def client_factory(variant):
    if variant == "no_context":
        return pmd.ClientPerMessageDeflateFactory(server_no_context_takeover=True, client_no_context_takeover=True)
    if variant == "small_window":
        return pmd.ClientPerMessageDeflateFactory(server_max_window_bits=10, client_max_window_bits=9)
    return pmd.ClientPerMessageDeflateFactory(client_max_window_bits=True)


def server_factory(variant):
    if variant == "no_context":
        return pmd.ServerPerMessageDeflateFactory(server_no_context_takeover=True, client_no_context_takeover=True)
    if variant == "small_window":
        return pmd.ServerPerMessageDeflateFactory(server_max_window_bits=10, client_max_window_bits=9)
    return pmd.ServerPerMessageDeflateFactory()


def messages():
    rnd = random.Random(7692)
    out = ["", "x", "héllo wörld " * 10, bytes(range(256)) * 4]
    out.append("a" * (1 << 20))  # compresses about 1000:1
    out.append(bytes(1 << 20))
    out.append(bytes(rnd.getrandbits(8) for _ in range(100_000)))  # does not compress
    text = " ".join(rnd.choice(["ring", "io", "deflate", "frame", "wörd"]) for _ in range(20_000))
    out.append(text)
    for size in (10, 100, 1000, 10_000):
        out.append(bytes(rnd.getrandbits(2) for _ in range(size)))
    return out


async def client(url, variant):
    async with websockets.connect(url, extensions=[client_factory(variant)], compression=None,
                                  max_size=2 ** 22) as ws:
        for m in messages() * 2:
            await ws.send(m)
            got = await ws.recv()
            assert got == m, f"echo of {len(m)} bytes differs"
        names = ", ".join(f"{e.name}" for e in ws.protocol.extensions) if hasattr(ws, "protocol") else \
            ", ".join(e.name for e in ws.extensions)
        print(f"ok {names}", flush=True)


async def echo(ws):
    async for message in ws:
        if message == "close-me":
            await ws.close(4001, "bye from python")
            return
        await ws.send(message)


async def server(variant):
    async with websockets.serve(echo, "127.0.0.1", 0, extensions=[server_factory(variant)], compression=None,
                                max_size=2 ** 22) as srv:
        print(srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().create_future()  # until killed


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("client", "server"):
        print(__doc__ or "usage: websocket_deflate_peer.py client URL VARIANT | server VARIANT", file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "client":
        asyncio.run(client(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "default"))
    else:
        asyncio.run(server(sys.argv[2]))


if __name__ == "__main__":
    main()
