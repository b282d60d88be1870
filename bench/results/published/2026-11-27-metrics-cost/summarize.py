#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Joins the rounds of a --metrics-cost run: OUT/results.json (every run, for
`bench/run --report-from OUT`) and OUT/summary.md (server CPU per operation and
throughput, metrics on and off: median, spread, each round's median, and whether
"on" is worse beyond the spread of "off").

    summarize.py OUT ROUND_DIR..."""
import json
import os
import statistics
import subprocess
import sys

ON, OFF = "ringio-uring-metrics", "ringio-uring-nometrics"


def load(dirs):
    base, runs = None, []
    for i, d in enumerate(dirs):
        with open(os.path.join(d, "results.json")) as f:
            res = json.load(f)
        for r in res["runs"]:
            r["round"] = i + 1
        base = base or res
        runs += [r for r in res["runs"] if r.get("ok") and r.get("kind") == "measure"]
    base["runs"] = runs
    base["command"] = f"{base['command']} (x{len(dirs)} rounds, joined by summarize.py)"
    base["repeats"] = base["repeats"] * len(dirs)
    return base


def value(r, key):
    return r["metrics"].get(key) if key in ("throughput", "rate") else r.get("per_op", {}).get(key)


def fmt(v, key):
    if key == "throughput":
        return f"{v:.2f}"
    if key == "rate":
        return f"{v / 1000:.1f}k"
    return f"{v:.2f}"


def table(runs, nrounds):
    cells = []
    for r in runs:
        c = (r["scenario"], r["cell_label"])
        if c not in cells:
            cells.append(c)
    lines = ["| cell | figure | metrics on: median (min–max) | metrics off: median (min–max) | on/off | "
             "per-round on/off | on worse beyond off's spread? |", "|---|---|---|---|---|---|---|"]
    verdicts = []
    for scen, label in cells:
        mine = [r for r in runs if (r["scenario"], r["cell_label"]) == (scen, label)]
        tput = "throughput" if scen == "pingpong" else "rate"
        for key, higher_worse in (("server_us", True), (tput, False)):
            vals = {s: [value(r, key) for r in mine if r["subject"] == s and value(r, key) is not None]
                    for s in (ON, OFF)}
            if not vals[ON] or not vals[OFF]:
                continue
            med = {s: statistics.median(v) for s, v in vals.items()}
            per_round = []
            for i in range(1, nrounds + 1):
                on = [value(r, key) for r in mine if r["subject"] == ON and r["round"] == i]
                off = [value(r, key) for r in mine if r["subject"] == OFF and r["round"] == i]
                if on and off:
                    per_round.append(statistics.median(on) / statistics.median(off))
            if higher_worse:
                worse = med[ON] > max(vals[OFF])
            else:
                worse = med[ON] < min(vals[OFF])
            verdicts.append(worse)
            name = "server CPU µs/op" if key == "server_us" else (
                "GiB/s" if key == "throughput" else "req/s")
            lines.append(f"| {scen} {label} | {name} | {fmt(med[ON], key)} ({fmt(min(vals[ON]), key)}–"
                         f"{fmt(max(vals[ON]), key)}) | {fmt(med[OFF], key)} ({fmt(min(vals[OFF]), key)}–"
                         f"{fmt(max(vals[OFF]), key)}) | {med[ON] / med[OFF]:.3f} | "
                         f"{', '.join(f'{x:.3f}' for x in per_round)} | {'yes' if worse else 'no'} |")
    return lines, verdicts


def main():
    out, dirs = sys.argv[1], sys.argv[2:]
    res = load(dirs)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "../../../run"), "--report-from", out,
                    "--no-plots"], check=True, stdout=subprocess.DEVNULL)
    lines, verdicts = table(res["runs"], len(dirs))
    n = {s: sum(1 for r in res["runs"] if r["subject"] == s) for s in (ON, OFF)}
    text = [f"# Metrics on and off: {len(dirs)} rounds of `{res['command'].split(' (')[0]}`", "",
            f"Runs: {n[ON]} with metrics on (`{ON}`: loop timing, `--metrics-port 0`), {n[OFF]} off "
            f"(`{OFF}`: `RINGIO_LOOP_TIMING=0`), alternating in every repeat. Started {res['started']}.", ""]
    text += lines
    text += ["", f"Cells and figures where metrics on is worse beyond the spread of off: "
                 f"{sum(verdicts)} of {len(verdicts)}.", ""]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
