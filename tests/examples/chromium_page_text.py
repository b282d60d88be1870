#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# chromium_page_text — waits, in real time, until an element of the page a headless
# Chromium shows contains a text, asking Chromium over its DevTools protocol. Chromium
# must run with --remote-debugging-port=0 and --user-data-dir=PROFILE (it writes its port
# there). Prints the element's text; exits 0 when the text appeared, 1 at the deadline.
#   chromium_page_text.py PROFILE URL_PREFIX ELEMENT_ID TEXT SECONDS
import asyncio
import json
import os
import sys
import time
import urllib.request

import websockets


def debugging_port(profile, deadline):
    path = os.path.join(profile, "DevToolsActivePort")
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                first = f.readline().strip()
            if first:
                return int(first)
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    return None


def page_socket(port, url_prefix, deadline):
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                for target in json.load(r):
                    if target.get("type") == "page" and target.get("url", "").startswith(url_prefix):
                        return target["webSocketDebuggerUrl"]
        except OSError:
            pass
        time.sleep(0.1)
    return None


async def element_text(ws, element_id, request_id):
    expression = f"(document.getElementById({json.dumps(element_id)}) || {{}}).textContent || ''"
    await ws.send(json.dumps({"id": request_id, "method": "Runtime.evaluate",
                              "params": {"expression": expression, "returnByValue": True}}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == request_id:
            return reply.get("result", {}).get("result", {}).get("value", "")


async def main(profile, url_prefix, element_id, text, seconds):
    deadline = time.monotonic() + seconds
    port = debugging_port(profile, deadline)
    if port is None:
        print("no DevToolsActivePort", flush=True)
        return 1
    url = page_socket(port, url_prefix, deadline)
    if url is None:
        print(f"no page at {url_prefix}", flush=True)
        return 1
    seen = ""
    async with websockets.connect(url, max_size=None) as ws:
        request_id = 0
        while time.monotonic() < deadline:
            request_id += 1
            seen = await asyncio.wait_for(element_text(ws, element_id, request_id),
                                          max(0.1, deadline - time.monotonic()))
            if text in seen:
                print(seen.replace("\n", "\\n"), flush=True)
                return 0
            await asyncio.sleep(0.1)
    print(seen.replace("\n", "\\n"), flush=True)
    return 1


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__ or "usage: chromium_page_text.py PROFILE URL_PREFIX ELEMENT_ID TEXT SECONDS", file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))))
    except asyncio.TimeoutError:
        print("timed out", flush=True)
        sys.exit(1)
