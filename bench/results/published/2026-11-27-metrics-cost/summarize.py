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
            r.pop("server_line", None)  # the same in every run: kept once, in backend_lines
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


def quartiles(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0], v[0], v[0]]
    return q[0], q[2]


def table(runs, nrounds):
    """One row per cell and figure; the verdict: is the median with metrics on worse
    than the median off beyond off's spread (min–max), and beyond its interquartile
    range; and in how many rounds is on's median worse than off's."""
    cells = []
    for r in runs:
        c = (r["scenario"], r["cell_label"])
        if c not in cells:
            cells.append(c)
    lines = ["| cell | figure | metrics on: median (IQR) [min–max] | metrics off: median (IQR) [min–max] | "
             "on/off | per-round on/off | rounds on worse | on worse beyond off's min–max? | beyond off's IQR? |",
             "|---|---|---|---|---|---|---|---|---|"]
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
            iqr = {s: quartiles(v) for s, v in vals.items()}
            per_round = []
            for i in range(1, nrounds + 1):
                on = [value(r, key) for r in mine if r["subject"] == ON and r["round"] == i]
                off = [value(r, key) for r in mine if r["subject"] == OFF and r["round"] == i]
                if on and off:
                    per_round.append(statistics.median(on) / statistics.median(off))
            if higher_worse:
                worse, worse_iqr = med[ON] > max(vals[OFF]), med[ON] > iqr[OFF][1]
                rounds_worse = sum(1 for x in per_round if x > 1)
            else:
                worse, worse_iqr = med[ON] < min(vals[OFF]), med[ON] < iqr[OFF][0]
                rounds_worse = sum(1 for x in per_round if x < 1)
            verdicts.append((worse, worse_iqr))
            name = "server CPU µs/op" if key == "server_us" else (
                "GiB/s" if key == "throughput" else "req/s")

            def show(s):
                v = vals[s]
                return (f"{fmt(med[s], key)} ({fmt(iqr[s][0], key)}–{fmt(iqr[s][1], key)}) "
                        f"[{fmt(min(v), key)}–{fmt(max(v), key)}]")
            lines.append(f"| {scen} {label} | {name} | {show(ON)} | {show(OFF)} | {med[ON] / med[OFF]:.3f} | "
                         f"{', '.join(f'{x:.3f}' for x in per_round)} | {rounds_worse} of {len(per_round)} | "
                         f"{'yes' if worse else 'no'} | {'yes' if worse_iqr else 'no'} |")
    return lines, verdicts


def main():
    out, dirs = sys.argv[1], sys.argv[2:]
    res = load(dirs)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, separators=(",", ":"))
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "../../../run"), "--report-from", out,
                    "--no-plots"], check=True, stdout=subprocess.DEVNULL)
    lines, verdicts = table(res["runs"], len(dirs))
    n = {s: sum(1 for r in res["runs"] if r["subject"] == s) for s in (ON, OFF)}
    text = [f"# Metrics on and off: {len(dirs)} rounds of `{res['command'].split(' (')[0]}`", "",
            f"Runs: {n[ON]} with metrics on (`{ON}`: loop timing, `--metrics-port 0`), {n[OFF]} off "
            f"(`{OFF}`: `RINGIO_LOOP_TIMING=0`), alternating in every repeat. Started {res['started']}.", ""]
    text += lines
    text += ["", f"Cells and figures where the median with metrics on is worse beyond off's min–max: "
                 f"{sum(w for w, _ in verdicts)} of {len(verdicts)}; beyond off's interquartile range: "
                 f"{sum(w for _, w in verdicts)} of {len(verdicts)}.", ""]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
