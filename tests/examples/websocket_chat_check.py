#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# websocket_chat_check — two members of examples/websocket_chat, driven with Python's
# `websockets`: joins, a line reaching both, a leave. Prints "ok" when all went right.
#   websocket_chat_check.py PORT
import asyncio
import sys

import websockets


async def main(port):
    url = f"ws://127.0.0.1:{port}/chat"
    a = await websockets.connect(url)
    assert await a.recv() == "* guest1 joined"
    b = await websockets.connect(url)
    assert await a.recv() == "* guest2 joined"
    assert await b.recv() == "* guest2 joined"
    await b.send("héllo from b")
    assert await a.recv() == "guest2: héllo from b"
    assert await b.recv() == "guest2: héllo from b"
    await b.close()
    assert await a.recv() == "* guest2 left"
    await a.close()
    print("ok", flush=True)


asyncio.run(asyncio.wait_for(main(sys.argv[1]), 10))
