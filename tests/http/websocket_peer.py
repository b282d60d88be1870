#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# websocket_peer — Python's `websockets` package as the peer of ringio's WebSocket
# tests (tests/http/websocket_test.cpp).
#   websocket_peer.py client URL [CA_FILE]   talks to ringio's echo server, prints "ok ..."
#   websocket_peer.py server [CERT KEY]      an echo server; prints its port, then serves
#                                            until killed
import asyncio
import ssl
import sys

import websockets


def client_tls(url, ca_file):
    if not url.startswith("wss:"):
        return None
    ctx = ssl.create_default_context(cafile=ca_file)
    return ctx


async def client(url, ca_file):
    async with websockets.connect(url, ssl=client_tls(url, ca_file), subprotocols=["chat", "other"],
                                  max_size=2 ** 22) as ws:
        await ws.send("héllo wörld")
        assert await ws.recv() == "héllo wörld"
        blob = bytes(range(256)) * 1024
        await ws.send(blob)
        assert await ws.recv() == blob
        await ws.send(["frag", "mented ", "téxt"])  # one message in three frames
        assert await ws.recv() == "fragmented téxt"
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        await ws.send("close-me")  # the server closes with 4000
        try:
            await asyncio.wait_for(ws.recv(), 5)
            raise AssertionError("the server did not close")
        except websockets.ConnectionClosed:  # 4000 is not "OK" (1000, 1001) to websockets
            pass
        print(f"ok subprotocol={ws.subprotocol} code={ws.close_code} reason={ws.close_reason}", flush=True)


async def echo(ws):
    async for message in ws:
        if message == "close-me":
            await ws.close(4001, "bye from python")
            return
        await ws.send(message)


async def server(cert, key):
    ctx = None
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
    async with websockets.serve(echo, "127.0.0.1", 0, ssl=ctx, subprotocols=["chat"], max_size=2 ** 22) as srv:
        port = srv.sockets[0].getsockname()[1]
        print(port, flush=True)
        await asyncio.get_running_loop().create_future()  # until killed


def main():
    if sys.argv[1] == "client":
        asyncio.run(client(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
    else:
        asyncio.run(server(*(sys.argv[2:4] if len(sys.argv) > 3 else (None, None))))


if __name__ == "__main__":
    main()
