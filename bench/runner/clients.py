# SPDX-License-Identifier: Apache-2.0
"""The load generators: their command lines and the parsing of their output
into one shape: throughput, ops (what CPU time is divided by), errors and
latency percentiles in microseconds."""
import json
import os
import re
import shutil

RINGIO_CLIENTS = {"ping", "echo_bench", "churn_bench"}
# Clients that are `ping` with a flag: the sender client and the per-operation-cancellation one.
PING_VARIANTS = {"ping-senders": ["--senders"], "ping-when-any": ["--when-any"]}
# The seed executor's own client (bench/peers/uring_exec/build.sh): each session sends a
# block, then makes ONE read of up to a block (which may return less), and repeats; it
# divides the bytes read by the whole timeout, connection set-up included.
URING_EXEC_PING = "uring-exec-ping"


def path_of(layout, client):
    if client in RINGIO_CLIENTS:
        return layout.app(client)
    if client in PING_VARIANTS:
        return layout.app("ping")
    if client == "httpmem":
        return os.path.join(layout.root, "bench/clients/httpmem")
    if client == URING_EXEC_PING:
        return os.path.join(layout.root, layout.build, "bench/peers/uring_exec_ping")
    if client in ("raw_epoll_echo_client", "ws_bench"):
        return os.path.join(layout.root, layout.build, "bench/peers", client)
    return shutil.which(client) or client


def available(layout, client):
    """None when the client can run, else why not."""
    path = path_of(layout, client)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return None
    if client in ("wrk", "ab"):
        return f"{client} not installed"
    if client == URING_EXEC_PING:
        return f"{os.path.relpath(path, layout.root)} not built (bench/peers/uring_exec/build.sh builds it)"
    return f"{os.path.relpath(path, layout.root)} not built"


def url_path(cell):
    """The path a cell requests: a file of the static root, or /."""
    from .scenarios import STATIC_FILES
    return "/" + STATIC_FILES[cell["file"]][0] if "file" in cell else "/"


def command(layout, client, cell, port, server_pid="PID"):
    """argv for `client` loading 127.0.0.1:port as `cell` says (httpmem also
    reads the RSS of the server's process tree: `server_pid`)."""
    p = path_of(layout, client)
    c = cell
    if client == "ping" or client in PING_VARIANTS:
        return ([p, str(port), str(c["threads"]), str(c["blocksize"]), str(c["sessions"]), str(c["timeout"])]
                + PING_VARIANTS.get(client, []))
    if client == URING_EXEC_PING:  # <port> <threads> <blocksize> <sessions> <timeout(s)>
        return [p, str(port), str(c["threads"]), str(c["blocksize"]), str(c["sessions"]), str(c["timeout"])]
    if client in ("echo_bench", "raw_epoll_echo_client"):
        # --warmup 0: the client counts every request of the window in which
        # the server's CPU time is taken.
        return [p, "--port", str(port), "--connections", str(c["connections"]), "--length", str(c["length"]),
                "--duration", _num(c["duration"]), "--threads", str(c.get("client_threads", 1)), "--warmup", "0"]
    if client == "ws_bench":
        from .servers import WS_PATH
        return [p, "--port", str(port), "--connections", str(c["connections"]), "--length", str(c["length"]),
                "--duration", _num(c["duration"]), "--path", WS_PATH]
    if client == "churn_bench":
        return [p, "--port", str(port), "--concurrency", str(c["concurrency"]), "--sessions", str(c["sessions"]),
                "--messages", str(c["messages"]), "--threads", str(c.get("client_threads", 1)),
                "--timeout", str(c.get("timeout", 120))]
    scheme = c.get("scheme", "http")
    if client == "wrk":
        return [p, "-t1", f"-c{c['connections']}", f"-d{_num(c['duration'])}s", "--latency",
                f"{scheme}://127.0.0.1:{port}{url_path(c)}"]
    if client == "ab":
        # -q: no progress lines; -r: a socket error is counted, not fatal.
        return [p, "-q", "-r", f"-c{c['concurrency']}", f"-n{c['requests']}", f"{scheme}://127.0.0.1:{port}/"]
    if client == "httpmem":
        load = c["load"]
        argv = [p, load, "--port", str(port)]
        if load == "download":
            return argv + ["--path", url_path(c), "--duration", _num(c["duration"])]
        argv += ["--pid", str(server_pid), "--connections", str(c["connections"])]
        if load == "ws-idle":
            from .servers import WS_PATH
            argv += ["--path", WS_PATH]
        if load == "slow":
            argv += ["--path", url_path(c), "--seconds", _num(c["seconds"])]
        return argv
    raise ValueError(f"unknown client {client}")


def _num(x):
    return str(int(x)) if float(x).is_integer() else str(x)


class ParseError(Exception):
    pass


def parse(client, stdout, block=None):
    if client in ("wrk",):
        return parse_wrk(stdout)
    if client == "ab":
        return parse_ab(stdout)
    if client == URING_EXEC_PING:
        return parse_uring_exec_ping(stdout, block)
    res = parse_result_line(stdout)
    if client == "httpmem":
        return parse_httpmem(res)
    if client == "ping" or client in PING_VARIANTS:
        rt, secs = res["round_trips"], res["seconds"]
        return {"throughput": res["gib_per_s"], "ops": rt, "errors": res.get("errors", 0),
                "rate": rt / secs if secs else None, "latency_us": {}, "raw": res}
    if client in ("echo_bench", "raw_epoll_echo_client"):
        lat = {k: res[f"{k}_us"] for k in ("p50", "p90", "p99", "p999", "max") if f"{k}_us" in res}
        return {"throughput": res["requests_per_s"], "ops": res["requests"], "errors": res.get("errors", 0),
                "rate": res["requests_per_s"], "latency_us": lat, "raw": res}
    if client == "ws_bench":
        return parse_ws_bench(res)
    if client == "churn_bench":
        lat = {k: res[f"{k}_us"] for k in ("mean", "p99") if f"{k}_us" in res}
        return {"throughput": res["sessions_per_s"], "ops": res["sessions"], "errors": res.get("failed", 0),
                "rate": res["sessions_per_s"], "latency_us": lat, "raw": res}
    raise ValueError(f"unknown client {client}")


def parse_ws_bench(res):
    """ws_bench's RESULT: messages (round trips) per second and latency; failed
    connections and unexpected frames are errors."""
    try:
        lat = {k: res[f"{k}_us"] for k in ("p50", "p90", "p99", "p999", "max") if f"{k}_us" in res}
        return {"throughput": res["messages_per_s"], "ops": res["messages"], "errors": res.get("errors", 0),
                "rate": res["messages_per_s"], "latency_us": lat, "raw": res}
    except KeyError as e:
        raise ParseError(f"incomplete ws_bench result: no {e}") from None


_BINARY_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def _binary_bytes(number, unit):
    if unit not in _BINARY_UNITS:
        raise ParseError(f"unknown unit '{unit}'")
    return float(number) * _BINARY_UNITS[unit]


def parse_uring_exec_ping(text, block):
    """uring_exec's ping prints `read: 1.887 GiB` (bytes read over the run) and
    `throughput (read): 965.914 MiB/s` (the same divided by its timeout).  Its reads
    may return part of a block, so the operations are blocks' worth of bytes read."""
    total = re.search(r"^read: ([0-9.]+) ?([KMGT]iB|B)$", text, re.M)
    rate = re.search(r"^throughput \(read\): ([0-9.]+) ?([KMGT]iB|B)/s$", text, re.M)
    if not total or not rate:
        raise ParseError("no 'read:' and 'throughput (read):' lines in uring_exec ping's output")
    read = _binary_bytes(*total.groups())
    per_s = _binary_bytes(*rate.groups())
    ops = read / block if block else None
    return {"throughput": per_s / (1 << 30), "ops": ops, "errors": 0,
            "rate": per_s / block if block else None, "latency_us": {},
            "raw": {"read_bytes": read, "read_bytes_per_s": per_s}}


def parse_result_line(text):
    """The JSON of the last `RESULT {...}` line."""
    for line in reversed(text.splitlines()):
        if line.startswith("RESULT "):
            try:
                return json.loads(line[len("RESULT "):])
            except json.JSONDecodeError as e:
                raise ParseError(f"bad RESULT line: {e}") from None
    raise ParseError("no RESULT line in the output")


_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def wrk_time_us(text):
    """wrk's '837.00us', '2.00ms', '1.02s', '1.00m' -> microseconds."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text.strip())
    if not m:
        raise ParseError(f"bad wrk time {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_wrk(text):
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(\w+),", text, re.M)
    rps = re.search(r"^Requests/sec:\s*([\d.]+)", text, re.M)
    if not m or not rps:
        raise ParseError("no 'requests in' / 'Requests/sec' lines in wrk output")
    lat = {}
    for pct, val in re.findall(r"^\s*(50|75|90|99)%\s+(\S+)\s*$", text, re.M):
        lat[f"p{pct}"] = wrk_time_us(val)
    mx = re.search(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
    if mx:
        lat["mean"] = wrk_time_us(mx.group(1))
        lat["max"] = wrk_time_us(mx.group(3))
    errors = 0
    se = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if se:
        errors += sum(int(x) for x in se.groups())
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
    if bad:
        errors += int(bad.group(1))
    requests = int(m.group(1))
    return {"throughput": float(rps.group(1)), "ops": requests, "errors": errors,
            "rate": float(rps.group(1)), "latency_us": lat,
            "raw": {"requests": requests, "requests_per_s": float(rps.group(1))}}


def parse_ab(text):
    def field(name, cast=float):
        m = re.search(rf"^{re.escape(name)}:\s*([\d.]+)", text, re.M)
        if not m:
            raise ParseError(f"no '{name}' in ab output")
        return cast(m.group(1))
    complete = field("Complete requests", int)
    failed = field("Failed requests", int)
    rps = field("Requests per second")
    taken = field("Time taken for tests")
    non2xx = re.search(r"^Non-2xx responses:\s*(\d+)", text, re.M)
    lat = {}
    for pct, ms in re.findall(r"^\s*(50|66|75|80|90|95|98|99|100)%\s+(\d+)", text, re.M):
        lat["max" if pct == "100" else f"p{pct}"] = float(ms) * 1e3
    errors = failed + (int(non2xx.group(1)) if non2xx else 0)
    return {"throughput": rps, "ops": complete, "errors": errors, "rate": rps, "latency_us": lat,
            "raw": {"complete": complete, "failed": failed, "requests_per_s": rps, "seconds": taken}}


def parse_httpmem(res):
    """httpmem's RESULT: download -> GB/s, with ops in MB (CPU per MB is
    CPU ms per GB); idle and slow -> the RSS readings in `memory`."""
    if res.get("load") == "download":
        mb = res["bytes"] / 1e6
        return {"throughput": res["gb_per_s"], "ops": mb, "errors": res.get("errors", 0),
                "rate": res["downloads"] / res["seconds"] if res["seconds"] else None, "latency_us": {},
                "raw": res}
    try:
        mem = memory_figures(res)
    except (KeyError, TypeError) as e:
        raise ParseError(f"incomplete httpmem result: {e}") from None
    return {"throughput": None, "ops": res["connections"], "errors": res.get("failed", 0), "rate": None,
            "latency_us": {}, "memory": mem, "raw": res}


def memory_figures(res):
    """From httpmem's RSS readings (KiB): before, loaded (all N idle, or the
    peak under slow readers), after (the last reading after the close), the
    increment per connection that was open (KiB) and after/before."""
    rss = res["rss_kib"]
    afters = sorted((float(k[len("after_"):-1]), v) for k, v in rss.items() if k.startswith("after_"))
    before, loaded = rss["before"], rss["loaded"]
    after = afters[-1][1] if afters else None
    ok = res["ok"]
    return {"before_kib": before, "loaded_kib": loaded, "peak_kib": rss.get("peak"),
            "after1_kib": afters[0][1] if afters else None, "after_kib": after,
            "per_conn_kib": (loaded - before) / ok if ok and loaded is not None and before is not None else None,
            "after_ratio": after / before if after is not None and before else None,
            "connections": res["connections"], "ok": ok, "failed": res.get("failed", 0),
            "failures": res.get("failures", {})}
