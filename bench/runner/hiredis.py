# SPDX-License-Identifier: Apache-2.0
"""The hiredis scenario: GET throughput of N hiredis clients against a real
redis-server on 127.0.0.1, one command in flight per client, three ways
(apps/hiredis_bench): hooked fibers running hiredis's blocking API on one thread
(`hiredis_bench_hooked --mode fibers`), hiredis's asynchronous API on a ringio loop on
one thread (`--mode async`), and one OS thread per client with the blocking API
(`--mode threads`).  A fresh redis-server per cell, pinned to the server CPUs and
stopped by PID; the client pinned to the client CPUs; the subjects alternate, run by
run.  Each run reports GETs over a timed window that starts once every client has
connected, and the CPU time of the client and of redis-server over that window."""
import json
import os
import shutil
import subprocess
import tempfile
import time

from . import measure, procs

SUBJECTS = ["hooked", "async", "threads"]
# subject -> (binary, --mode)
BINARIES = {"hooked": ("hiredis_bench_hooked", "fibers"), "async": ("hiredis_bench", "async"),
            "threads": ("hiredis_bench", "threads")}
WHAT = {"hooked": "hooked fibers, blocking API, one thread",
        "async": "asynchronous API on a ringio loop, one thread",
        "threads": "a thread per client, blocking API"}
CLIENTS = [10, 100, 1000]
QUICK_SECONDS = 1
FULL_SECONDS = 5
HEADROOM = 64  # descriptors beyond the clients' (listener, redis's own, the runner's probe)
# The target: hooked fibers' GETs per second at least this many times thread-per-connection's.
TARGET = {"clients": 1000, "ratio": 3.0, "subject": "hooked", "other": "threads"}
# The ratios shown per cell: (numerator, denominator) of GETs per second.
RATIOS = [("hooked", "threads"), ("hooked", "async"), ("async", "threads")]


def cells(full, seconds=None):
    """One cell per client count."""
    d = seconds or (FULL_SECONDS if full else QUICK_SECONDS)
    return [{"clients": n, "seconds": d} for n in CLIENTS]


def round_seconds(todo):
    """A rough length of one round of the cells `todo` (every subject once each)."""
    return sum(len(SUBJECTS) * (float(c["seconds"]) + 0.8) for c in todo)


def label(cell):
    return f"clients={cell['clients']}"


def mark(cell, nofile):
    """Why a cell is not run here (None: run it)."""
    need = int(cell["clients"]) + HEADROOM
    if need > nofile:
        return f"beyond the descriptor limit: {cell['clients']} clients need {need} fds, limit {nofile}"
    return None


def redis_path():
    return shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server")
                                            else None)


def available(layout):
    """None when redis-server and both client binaries are present, else why not."""
    for binary in ("hiredis_bench", "hiredis_bench_hooked"):
        p = layout.app(binary)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            return f"{os.path.relpath(p, layout.root)} not built (needs libhiredis-dev)"
    if not redis_path():
        return "redis-server is not installed (scripts/install-deps.sh bench)"
    return None


def redis_command(path, port, dirpath, clients):
    """redis-server on 127.0.0.1:port, nothing persisted, room for the cell's clients."""
    return [path, "--port", str(port), "--bind", "127.0.0.1", "--dir", dirpath, "--save", "", "--appendonly", "no",
            "--loglevel", "warning", "--daemonize", "no", "--maxclients", str(int(clients) + HEADROOM)]


def client_command(layout, subject, port, cell, server_pid=None):
    binary, mode = BINARIES[subject]
    argv = [layout.app(binary), "--mode", mode, "--port", str(port), "--clients", str(cell["clients"]),
            "--seconds", _num(cell["seconds"])]
    if server_pid:
        argv += ["--server-pid", str(server_pid)]
    return argv


def _num(x):
    return str(int(x)) if float(x).is_integer() else str(x)


def parse(stdout):
    """The figures of one run from hiredis_bench's RESULT line, or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            gets, secs = r["gets"], r["seconds"]
            server = r.get("server_cpu_s")
            return {"gets": gets, "seconds": secs, "gets_per_s": r["gets_per_s"], "errors": r.get("errors", 0),
                    "failed_connections": r.get("failed_connections", 0), "connected": r.get("connected"),
                    "cpu_s": r["cpu_s"], "cpu_us_per_get": r["cpu_s"] * 1e6 / gets if gets else None,
                    "server_cpu_s": server,
                    "server_us_per_get": server * 1e6 / gets if gets and server is not None else None,
                    "cpu_use": r["cpu_s"] / secs if secs else None,
                    "server_cpu_use": server / secs if secs and server is not None else None}
    return None


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


KEYS = ("gets_per_s", "cpu_us_per_get", "server_us_per_get", "cpu_use", "server_cpu_use", "other_use")


def summarize(samples):
    """{key: {median, min, max, n}} over one subject's runs in one cell, and the errors."""
    out = {}
    for key in KEYS:
        xs = [s[key] for s in samples if s.get(key) is not None]
        out[key] = {"median": _median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None
    out["errors"] = sum(s.get("errors", 0) for s in samples)
    out["failed_connections"] = sum(s.get("failed_connections", 0) for s in samples)
    return out


def ratios(summary):
    """'a/b' -> a's median GETs per second over b's, and 'cpu:a/b' -> a's GETs per client
    CPU second over b's (b's median CPU per GET over a's), where both ran."""
    out = {}
    for a, b in RATIOS:
        x, y = (summary.get(a) or {}).get("gets_per_s"), (summary.get(b) or {}).get("gets_per_s")
        if x and y and y["median"]:
            out[f"{a}/{b}"] = x["median"] / y["median"]
        x, y = (summary.get(a) or {}).get("cpu_us_per_get"), (summary.get(b) or {}).get("cpu_us_per_get")
        if x and y and x["median"]:
            out[f"cpu:{a}/{b}"] = y["median"] / x["median"]
    return out


def resummarize(rec):
    """Recomputes every cell's summary and ratios from its runs (for --report-from)."""
    for c in (rec or {}).get("cells", []):
        if c.get("runs"):
            c["summary"] = {s: summarize([x for x in c["runs"].get(s, []) if "error" not in x]) for s in SUBJECTS}
            c["ratios"] = ratios(c["summary"])
    return rec


def order(repeat):
    """The subjects of one round: rotated by one each round, so that none always runs first."""
    k = repeat % len(SUBJECTS)
    return SUBJECTS[k:] + SUBJECTS[:k]


def one_run(layout, subject, port, cell, server_pid, cpus):
    argv = client_command(layout, subject, port, cell, server_pid)
    limit = float(cell["seconds"]) * 3 + 60
    with tempfile.TemporaryDirectory(prefix="ringio-hiredis-run-") as d:
        child = procs.Child(argv, os.path.join(d, "out"), os.path.join(d, "err"), cpus=cpus)
        m0, s0, t0 = measure.machine_cpu(), sum(measure.cpu_times([server_pid])), time.monotonic()
        if not child.wait(limit):
            child.kill()
            return {"error": f"{os.path.basename(argv[0])} did not finish in {limit:.0f} s"}
        child.reap()
        m1, s1, wall = measure.machine_cpu(), sum(measure.cpu_times([server_pid])), time.monotonic() - t0
        out, err = child.output(), child.errors()
    parsed = parse(out) if child.status == 0 else None
    if not parsed or not parsed["gets"]:
        return {"error": f"{os.path.basename(argv[0])} exited {child.status}: {err.strip()[-300:]}"}
    # Everything else the machine did meanwhile (other users' work, the runner), in CPUs.
    client = sum(measure.rusage_cpu(child.rusage)) if child.rusage else 0.0
    parsed["other_use"] = max(0.0, (m1[0] - m0[0]) - (s1 - s0) - client) / wall if wall > 0 else None
    return parsed


def start_redis(cell, server_cpus, tmpdir):
    """A fresh redis-server for one cell; (child, port) once it accepts, or raises RuntimeError."""
    port = procs.free_port()
    child = procs.Child(redis_command(redis_path(), port, tmpdir, cell["clients"]),
                        os.path.join(tmpdir, "redis.out"), os.path.join(tmpdir, "redis.err"), cpus=server_cpus)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if child.exited():
            child.reap()
            text = (child.errors() or child.output()).strip()[-300:]
            raise RuntimeError(f"redis-server exited {child.status}: {text}")
        if procs.port_accepts(port):
            return child, port
        time.sleep(0.02)
    child.stop()
    raise RuntimeError("redis-server did not accept connections within 10 s")


def run(layout, full, repeats, server_cpus, client_cpus, nofile, seconds=None, where=None, log=print):
    """Runs every cell; returns the record kept in results.json."""
    why = available(layout)
    rec = {"cells": [], "error": why, "marked": []}
    if why:
        return rec
    for cell in cells(full, seconds):
        if where and any(k in cell and str(cell[k]) not in vs for k, vs in where.items()):
            continue
        reason = mark(cell, nofile)
        if reason:
            rec["marked"].append({"label": label(cell), "reason": reason})
            continue
        runs = {s: [] for s in SUBJECTS}
        tmpdir = tempfile.mkdtemp(prefix="ringio-redis-")
        try:
            server, port = start_redis(cell, server_cpus, tmpdir)
        except RuntimeError as e:
            shutil.rmtree(tmpdir, ignore_errors=True)
            rec["cells"].append({"cell": cell, "label": label(cell), "runs": runs, "summary": {}, "ratios": {},
                                 "errors": [str(e)]})
            continue
        try:
            for r in range(repeats):
                for s in order(r):
                    x = one_run(layout, s, port, cell, server.pid, client_cpus)
                    runs[s].append(x)
                    log(f"hiredis {label(cell)} {s} r{r + 1}: " + (
                        f"FAILED: {x['error']}" if "error" in x else
                        f"{x['gets_per_s']:.0f} GET/s, client {x['cpu_us_per_get']:.2f} us/GET"))
        finally:
            server.stop()
            shutil.rmtree(tmpdir, ignore_errors=True)
        summary = {s: summarize([x for x in runs[s] if "error" not in x]) for s in SUBJECTS}
        rec["cells"].append({"cell": cell, "label": label(cell), "runs": runs, "summary": summary,
                             "ratios": ratios(summary),
                             "errors": [x["error"] for s in SUBJECTS for x in runs[s] if "error" in x]})
    c = cells(full, seconds)[-1]
    rec["commands"] = {s: " ".join([BINARIES[s][0]] + client_command(layout, s, "PORT", c, "PID")[1:])
                       for s in SUBJECTS}
    rec["redis_command"] = " ".join(["redis-server"] + redis_command("x", "PORT", "TMPDIR", c["clients"])[1:])
    return rec


def targets(rec, selected=True):
    """The hooks' target row: hooked fibers >= 3x thread-per-connection at 1,000 clients."""
    what = (f"hiredis: GETs/s of {TARGET['subject']} fibers >= {TARGET['ratio']:.1f}x "
            f"{TARGET['other']} (a thread per connection)")
    row = {"target": what, "cell": f"clients={TARGET['clients']}"}
    if not selected:
        return [dict(row, measured="not measured: hiredis not selected (--scenarios)", met=None)]
    if not rec or rec.get("error"):
        return [dict(row, measured="not measured: " + ((rec or {}).get("error") or "not run"), met=None)]
    for m in rec.get("marked", []):
        if m["label"] == row["cell"]:
            return [dict(row, measured="not measured: " + m["reason"], met=None)]
    for c in rec["cells"]:
        if c["cell"]["clients"] == TARGET["clients"]:
            r = c["ratios"].get(f"{TARGET['subject']}/{TARGET['other']}")
            if r is None:
                return [dict(row, measured="not measured: no successful runs", met=None)]
            return [dict(row, measured=f"{r:.2f}x", ratio=r, met=r >= TARGET["ratio"])]
    return [dict(row, measured="not measured: cell not selected (--where)", met=None)]


def _fmt(v, digits=0, scale=1.0):
    if not v:
        return "-"
    return (f"{v['median'] * scale:.{digits}f} ({v['min'] * scale:.{digits}f}"
            f"\u2013{v['max'] * scale:.{digits}f})")


def section(rec):
    """The report's section (markdown)."""
    out = ["### hiredis", "",
           "GET of one 16-byte value from a redis-server on 127.0.0.1 (a fresh one per cell, on the server "
           "CPUs), N clients with one command in flight each, for a fixed window once all have connected; "
           "the client on the client CPUs. Subjects: " + "; ".join(f"**{s}**: {WHAT[s]}" for s in SUBJECTS)
           + ". The subjects alternate run by run. CPU is the client process's (getrusage) and "
           "redis-server's (/proc/PID/stat) over the window; CPU use is that time over the window. Median of "
           "the runs (min\u2013max)."]
    if rec.get("error"):
        return "\n".join(out + ["", f"Not run: {rec['error']}."])
    if rec.get("commands"):
        out += ["", "Commands: " + "; ".join(f"`{rec['commands'][s]}`" for s in SUBJECTS)
                + f"; the server: `{rec['redis_command']}`."]
    rows = ["| clients | subject | GETs/s | client CPU \u00b5s/GET | redis CPU \u00b5s/GET | client CPU use | "
            "redis CPU use | errors |", "|---|---|---|---|---|---|---|---|"]
    for c in rec["cells"]:
        for s in SUBJECTS:
            sm = c["summary"].get(s) or {}
            errs = sm.get("errors", 0) + sm.get("failed_connections", 0)
            rows.append(f"| {c['cell']['clients']} | {s} | {_fmt(sm.get('gets_per_s'))} | "
                        f"{_fmt(sm.get('cpu_us_per_get'), 2)} | {_fmt(sm.get('server_us_per_get'), 2)} | "
                        f"{_fmt(sm.get('cpu_use'), 0, 100)}% | {_fmt(sm.get('server_cpu_use'), 0, 100)}% | {errs} |")
    ratio_rows = ["| clients | " + " | ".join(f"{a} / {b}" for a, b in RATIOS) + " | "
                  + " | ".join(f"{a} / {b} per CPU" for a, b in RATIOS) + " |",
                  "|---|" + "---|" * (2 * len(RATIOS))]
    for c in rec["cells"]:
        keys = [f"{a}/{b}" for a, b in RATIOS] + [f"cpu:{a}/{b}" for a, b in RATIOS]
        ratio_rows.append(f"| {c['cell']['clients']} | " + " | ".join(
            f"{c['ratios'][k]:.2f}x" if k in c["ratios"] else "-" for k in keys) + " |")
    out += ["", *rows, "", "Ratios of the median GETs per second, then of the GETs per client CPU second (the "
            "inverse ratio of the median client CPU per GET: steadier on a busy machine):", "", *ratio_rows]
    for m in rec.get("marked", []):
        out += ["", f"Not run: {m['label']}: {m['reason']}."]
    errs = [e for c in rec["cells"] for e in c["errors"]]
    if errs:
        out += ["", f"Failed runs: {len(errs)} (first: {errs[0]})."]
    other = sorted(x["other_use"] for c in rec["cells"] for rs in c["runs"].values() for x in rs
                   if x.get("other_use") is not None)
    if other:
        med = other[len(other) // 2]
        out += ["", f"Other work on the machine during these runs (all CPU time minus client and redis-server, "
                    f"from /proc/stat): median {med * 100:.0f}% of one CPU, max {other[-1] * 100:.0f}%."
                + (" **The machine was busy: throughput is unreliable.**" if med > 0.1 else "")]
    return "\n".join(out)
