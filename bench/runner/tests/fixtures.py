# SPDX-License-Identifier: Apache-2.0
"""Synthetic runs for the statistics, target and report tests."""


def run(scenario, label, subject, throughput, server_us, repeat=1, kind="measure", ok=True, errors=0,
        syscalls=None, cell=None, client_us=5.0, lat=None):
    ops = 100000
    rec = {"scenario": scenario, "cell_label": label, "cell": cell or {"threads": 1}, "subject": subject,
           "server": subject, "client": "x", "repeat": repeat, "kind": kind, "ok": ok,
           "error": None if ok else "boom", "wall_s": 1.0,
           "server_cpu": {"user_s": server_us * ops / 1e6 * 0.25, "sys_s": server_us * ops / 1e6 * 0.75},
           "metrics": {"throughput": throughput, "rate": throughput, "ops": ops, "errors": errors,
                       "latency_us": lat or {"p50": 10.0, "p99": 50.0}},
           "per_op": {"server_us": server_us, "server_user_us": server_us * 0.25,
                      "server_sys_us": server_us * 0.75, "client_us": client_us}}
    if syscalls is not None:
        rec["per_op"]["syscalls"] = syscalls
    return rec


def cell_runs(scenario, label, values, cell=None):
    """values: {subject: [(throughput, server_us), ...]} -> runs, interleaved."""
    runs = []
    n = max(len(v) for v in values.values())
    for i in range(n):
        for s, vals in values.items():
            if i < len(vals):
                runs.append(run(scenario, label, s, vals[i][0], vals[i][1], repeat=i + 1, cell=cell))
    return runs
