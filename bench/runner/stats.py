# SPDX-License-Identifier: Apache-2.0
"""Medians, spreads and ratios per scenario cell, from the raw runs."""
import statistics

METRICS = ("throughput", "rate", "server_us", "server_user_us", "server_sys_us", "client_us")
# The RSS figures of the memory cells (clients.memory_figures), and those
# compared with the baseline.
MEMORY = ("before_kib", "loaded_kib", "peak_kib", "after1_kib", "after_kib", "per_conn_kib", "after_ratio")
MEMORY_RATIOS = ("loaded_kib", "per_conn_kib", "after_kib")
# The figures the targets compare round by round.
ROUND_METRICS = ("throughput", "server_us")


def spread(values):
    """{median, min, max, n} of the values that are not None, or None."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def _value(run, key):
    if key in ("throughput", "rate", "errors", "ops"):
        return run.get("metrics", {}).get(key)
    return run.get("per_op", {}).get(key)


def summarize(runs, baseline_of):
    """Per (scenario, cell, subject): medians and spreads of the measured runs,
    syscalls per op from the syscall runs, and the ratios of the medians to
    the scenario's baseline subject (`baseline_of(scenario) -> name`).
    Returns a list of dicts in first-seen order."""
    groups = {}
    for r in runs:
        key = (r["scenario"], r["cell_label"], r["subject"])
        g = groups.setdefault(key, {"scenario": r["scenario"], "cell_label": r["cell_label"], "cell": r["cell"],
                                     "subject": r["subject"], "server": r["server"], "client": r["client"],
                                     "measure": [], "syscalls": [], "failed": []})
        if not r.get("ok"):
            g["failed"].append(r.get("error") or "failed")
        elif r.get("kind") == "syscalls":
            g["syscalls"].append(r)
        else:
            g["measure"].append(r)
    out = []
    for g in groups.values():
        ms = g.pop("measure")
        sy = g.pop("syscalls")
        g["runs_ok"] = len(ms)
        for k in METRICS:
            g[k] = spread(_value(r, k) for r in ms)
        g["syscalls_per_op"] = spread(_value(r, "syscalls") for r in sy)
        # Each timed run's figure by its round, for the targets' per-round ratios (verdict.py).
        g["rounds"] = {k: [[r["repeat"], _value(r, k)] for r in ms if r.get("repeat") is not None
                           and _value(r, k) is not None] for k in ROUND_METRICS}
        g["errors"] = sum(_value(r, "errors") or 0 for r in ms)
        g["utilization"] = spread((r["server_cpu"]["user_s"] + r["server_cpu"]["sys_s"]) / r["wall_s"]
                                  for r in ms if r.get("wall_s"))
        lat = {}
        for r in ms:
            for p, v in r.get("metrics", {}).get("latency_us", {}).items():
                lat.setdefault(p, []).append(v)
        g["latency_us"] = {p: statistics.median(v) for p, v in lat.items()}
        mem = [r["metrics"]["memory"] for r in ms if r.get("metrics", {}).get("memory")]
        if mem:  # only memory cells get the key: other summaries stay as they were
            g["memory"] = {k: spread(m.get(k) for m in mem) for k in MEMORY}
        out.append(g)
    index = {(g["scenario"], g["cell_label"], g["subject"]): g for g in out}
    for g in out:
        base = index.get((g["scenario"], g["cell_label"], baseline_of(g["scenario"])))
        g["ratio"] = {}
        for k in ("throughput", "server_us", "client_us"):
            mine = g[k]["median"] if g.get(k) else None
            theirs = base[k]["median"] if base and base.get(k) else None
            g["ratio"][k] = ratio(mine, theirs)
        mine = g["syscalls_per_op"]["median"] if g["syscalls_per_op"] else None
        theirs = base["syscalls_per_op"]["median"] if base and base["syscalls_per_op"] else None
        g["ratio"]["syscalls"] = ratio(mine, theirs)
        if "memory" in g:
            theirs = base.get("memory", {}) if base else {}
            for k in MEMORY_RATIOS:
                a, b = g["memory"].get(k), theirs.get(k)
                g["ratio"][k] = ratio(a["median"] if a else None, b["median"] if b else None)
    return out


def find(summary, scenario, cell_label, subject):
    for g in summary:
        if g["scenario"] == scenario and g["cell_label"] == cell_label and g["subject"] == subject:
            return g
    return None
