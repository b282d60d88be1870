# SPDX-License-Identifier: Apache-2.0
"""The switch scenario: apps/switch_bench times two counters that hand
control to each other, for ringio's stackless task, ringio's fiber,
swapcontext(3) and raw Boost.Context fcontext (the floor), and prints one
`RESULT {json}` line per subject.  No server: the program runs pinned to the
server CPUs while nothing else runs."""
import json
import os
import subprocess

FLOOR = "fcontext"  # what the ratios are against
SUBJECTS = ["task-direct", "task-loop", "fiber-direct", "fiber-handoff", "fiber-loop", "ucontext", "fcontext"]


def command(layout, full, repeats):
    switches = 10_000_000 if full else 1_000_000
    return [layout.app("switch_bench"), "--switches", str(switches), "--repeats", str(max(repeats, 3))]


def available(layout):
    p = layout.app("switch_bench")
    return None if os.path.isfile(p) and os.access(p, os.X_OK) else f"{os.path.relpath(p, layout.root)} not built"


def _field(res, *names):
    for n in names:
        if n in res:
            return res[n]
    return None


def parse(stdout):
    """Subject -> {median, min, max} ns per switch, from the RESULT lines."""
    out = {}
    for line in stdout.splitlines():
        if not line.startswith("RESULT "):
            continue
        res = json.loads(line[len("RESULT "):])
        name = _field(res, "subject", "name")
        med = _field(res, "ns_per_switch", "median_ns", "ns")
        if name is None or med is None:
            continue
        out[name] = {"median": med, "min": _field(res, "min_ns", "min"), "max": _field(res, "max_ns", "max"),
                     "raw": res}
    return out


def run(layout, full, repeats, cpus):
    """Runs switch_bench once; returns the record kept in results.json."""
    why = available(layout)
    argv = command(layout, full, repeats)
    rec = {"command": argv, "subjects": {}, "error": why}
    if why:
        return rec
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                       preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    rec["rc"] = p.returncode
    rec["subjects"] = parse(p.stdout)
    if p.returncode != 0 or not rec["subjects"]:
        rec["error"] = f"switch_bench exited {p.returncode}: {p.stderr.strip()[-300:]}"
    return rec


def section(rec):
    """The report's section (markdown)."""
    out = ["### switch", "",
           "apps/switch_bench: two counters hand control to each other (one switch = one hand-over), "
           "timed over the whole count; median of the repeats with min" + "\u2013" + "max, pinned to the "
           "server CPUs. Lower is better.", "",
           f"Command: `{' '.join([os.path.basename(rec['command'][0])] + rec['command'][1:])}`."]
    if rec.get("error"):
        return "\n".join(out + ["", f"Not run or failed: {rec['error']}."])
    subj = rec["subjects"]
    floor = subj.get(FLOOR, {}).get("median")
    rows = ["| subject | ns per switch median (min\u2013max) | x " + FLOOR + " |", "|---|---|---|"]
    for name, v in subj.items():
        ratio = f"{v['median'] / floor:.2f}" if floor else "-"
        rng = f" ({v['min']:.2f}\u2013{v['max']:.2f})" if v.get("min") is not None and v.get("max") is not None else ""
        rows.append(f"| {name} | {v['median']:.2f}{rng} | {ratio} |")
    return "\n".join(out + [""] + rows)



def cpus_for(server_cpus):
    """The CPUs to pin to: the server's, else all."""
    return server_cpus or sorted(os.sched_getaffinity(0))
