# SPDX-License-Identifier: Apache-2.0
"""The spawn scenario: child process start-up rate on one thread.  Each subject runs
`/bin/echo x` --count times, --concurrency at a time (spawn with its output piped,
read all of it, wait): apps/spawn_bench (ringio's process::output) and
bench/peers/tokio's tokio_spawn_bench (tokio::process::Command::output on one
current-thread runtime).  The two alternate run by run, pinned to the server CPUs
(the children inherit the pinning).  CPU per spawn is the parent's own time, which
each program reads itself (RUSAGE_SELF), and, as a second figure, the parent's and
its children's together (wait4)."""
import json
import os

from . import fileio

SUBJECTS = ["ringio", "tokio"]
BASELINE = "tokio"
PROGRAM = "echo"


def cells(full):
    if full:
        return [{"program": p, "concurrency": c, "count": 10000} for p in ("echo", "true") for c in (1, 8, 64)]
    return [{"program": PROGRAM, "concurrency": c, "count": 2000} for c in (1, 8)]


def label(cell):
    return f"{cell['program']} concurrency={cell['concurrency']} count={cell['count']}"


def tokio_binary(layout):
    return os.path.join(layout.root, fileio.TOKIO_DIR, "tokio_spawn_bench")


def command(layout, subject, cell, backend="uring"):
    args = ["--count", str(cell["count"]), "--concurrency", str(cell["concurrency"]), "--program", cell["program"]]
    if subject == "ringio":
        return [layout.app("spawn_bench")] + args + ["--backend", backend]
    return [tokio_binary(layout)] + args


def missing(layout):
    """{subject: why it cannot run} for the subjects whose program is not built."""
    out = {}
    for s, p in (("ringio", layout.app("spawn_bench")), ("tokio", tokio_binary(layout))):
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            out[s] = f"{os.path.relpath(p, layout.root)} not built"
    return out


def available(layout):
    """None when at least ringio's program is built, else why not."""
    return missing(layout).get("ringio")


def parse(stdout):
    """(spawns, seconds, own cpu seconds) from a RESULT line, or None."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            return r["spawns"], r["seconds"], r["cpu_self_s"]
    return None


def one_run(layout, subject, cell, cpus, backend):
    argv = command(layout, subject, cell, backend)
    rc, out, err, cpu_all = fileio.timed(argv, cpus)
    parsed = parse(out) if rc == 0 else None
    if not parsed or not parsed[0]:
        return {"error": f"{os.path.basename(argv[0])} exited {rc}: {err.strip()[-300:]}"}
    n, secs, own = parsed
    return {"spawns": n, "seconds": secs, "per_s": n / secs, "cpu_us_per_spawn": own * 1e6 / n,
            "cpu_all_us_per_spawn": cpu_all * 1e6 / n}


KEYS = ("per_s", "cpu_us_per_spawn", "cpu_all_us_per_spawn")


def summarize(samples):
    out = {}
    for key in KEYS:
        xs = [s[key] for s in samples if s.get(key) is not None]
        out[key] = {"median": fileio._median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None
    return out


def run(layout, full, repeats, cpus, where=None, backend="uring"):
    why = available(layout)
    miss = missing(layout)
    rec = {"cells": [], "error": why, "missing": miss, "backend": backend,
           "subjects": [s for s in SUBJECTS if s not in miss]}
    if why:
        return rec
    subs = rec["subjects"]
    for cell in cells(full):
        if not fileio.matches(cell, where):
            continue
        runs = {s: [] for s in subs}
        for r in range(repeats):
            order = subs if r % 2 == 0 else list(reversed(subs))
            for s in order:
                runs[s].append(one_run(layout, s, cell, cpus, backend))
        summary = {s: summarize([x for x in runs[s] if "error" not in x]) for s in subs}
        rec["cells"].append({"cell": cell, "label": label(cell), "runs": runs, "summary": summary,
                             "errors": [f"{s}: {x['error']}" for s in subs for x in runs[s] if "error" in x]})
    example = cells(full)[0]
    rec["commands"] = {s: " ".join([os.path.basename(a) if i == 0 else a
                                    for i, a in enumerate(command(layout, s, example, backend))]) for s in subs}
    return rec


def section(rec):
    out = ["### spawn", "",
           "Child processes on one thread: `/bin/echo x` (its output read and checked) or `/bin/true`, "
           "`count` of them, `concurrency` at a time; each is spawned with its standard output and error piped, "
           "read to the end and waited for (ringio's `process::output`, tokio's `Command::output` on a "
           "current-thread runtime). Subjects alternate run by run. CPU per spawn: the parent's own user + "
           "system time (RUSAGE_SELF) over the children it ran; *with children*: the parent's and its reaped "
           "children's (wait4). Median (min\u2013max); `x tokio` is the ratio of medians (CPU: lower is better)."]
    if rec.get("error"):
        return "\n".join(out + ["", f"Not run: {rec['error']}."])
    for s, why in (rec.get("missing") or {}).items():
        out += ["", f"- {s}: skipped: {why}."]
    if rec.get("commands"):
        out += ["", "Commands: " + " and ".join(f"`{c}`" for c in rec["commands"].values()) + "."]
    rows = ["| cell | subject | spawns/s | CPU \u00b5s/spawn (parent) | CPU \u00b5s/spawn (with children) | "
            "spawns/s x tokio | CPU x tokio |", "|---|---|---|---|---|---|---|"]
    for c in rec["cells"]:
        sm = c["summary"]
        base = sm.get(BASELINE) or {}
        for i, s in enumerate(x for x in rec["subjects"] if x in sm):
            v = sm[s]
            rr = []
            for key in ("per_s", "cpu_us_per_spawn"):
                b, m = (base.get(key) or {}).get("median"), (v.get(key) or {}).get("median")
                rr.append(f"{m / b:.2f}x" if b and m is not None else "-")
            rows.append(f"| {c['label'] if i == 0 else ''} | {s} | {fileio._fmt(v['per_s'], 0)} | "
                        f"{fileio._fmt(v['cpu_us_per_spawn'], 1)} | {fileio._fmt(v['cpu_all_us_per_spawn'], 1)} | "
                        f"{rr[0]} | {rr[1]} |")
    errs = [e for c in rec["cells"] for e in c["errors"]]
    if errs:
        rows += ["", f"Failed runs: {len(errs)} (first: {errs[0]})."]
    return "\n".join(out + [""] + rows)
