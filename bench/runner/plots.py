# SPDX-License-Identifier: Apache-2.0
"""PNG plots from results.json; runs under bench/.venv's Python (matplotlib).

    python -m runner.plots RESULTS_DIR      (from bench/)

Prints the names of the files it wrote, one per line."""
import json
import os
import sys

X = {"pingpong": "sessions", "echo": "connections", "churn": "concurrency", "http-wrk": "connections",
     "http-ab": "concurrency", "client-cost": "connections", "http-idle": "connections",
     "http-static": "connections", "pingpong-cancel": "sessions", "echo-idle": "connections",
     "https-wrk": "connections", "tls-handshake": "concurrency", "tls-idle": "connections",
     "pingpong-seed": "sessions", "ws-echo": "connections", "ws-idle": "connections"}
UNIT = {"pingpong": "GiB/s", "pingpong-cancel": "GiB/s", "pingpong-seed": "GiB/s", "churn": "sessions/s",
        "ws-echo": "msg/s"}
LOAD_UNIT = {"download": "GB/s"}  # cells of http-static; the others are req/s


def _unit(scen, g):
    return LOAD_UNIT.get(g["cell"].get("load"), UNIT.get(scen, "req/s"))
PCTS = ["p50", "mean", "p75", "p90", "p99", "p999", "max"]
FIXED = {"duration", "timeout", "blocksize", "messages", "requests"}


def _panels(groups, xkey):
    """Groups split by the cell parameters other than x (and fixed ones)."""
    fixed = FIXED | ({"sessions"} if xkey != "sessions" else set())
    panels = {}
    for g in groups:
        key = tuple((k, v) for k, v in sorted(g["cell"].items()) if k != xkey and k not in fixed)
        panels.setdefault(key, []).append(g)
    return panels


def _title(scen, key):
    return scen + ("" if not key else " (" + ", ".join(f"{k}={v}" for k, v in key) + ")")


def throughput(plt, res, scen, outdir):
    groups = [g for g in res["summary"] if g["scenario"] == scen and g.get("throughput")]
    if not groups:
        return None
    xkey = X[scen]
    # Cells that differ by their load, not along an axis, get a panel each.
    if len({g["cell"][xkey] for g in groups}) == 1 or any("load" in g["cell"] for g in groups):
        return throughput_bars(plt, groups, scen, xkey, outdir)
    panels = _panels(groups, xkey)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    for ax, (key, gs) in zip(axes[0], sorted(panels.items())):
        subjects = list(dict.fromkeys(g["subject"] for g in gs))
        for i, s in enumerate(subjects):
            pts = sorted((g["cell"][xkey], g["throughput"]) for g in gs if g["subject"] == s)
            shift = 1 + 0.025 * (i - (len(subjects) - 1) / 2)  # side by side on the log axis
            xs = [p[0] * shift for p in pts]
            med = [p[1]["median"] for p in pts]
            lo = [p[1]["median"] - p[1]["min"] for p in pts]
            hi = [p[1]["max"] - p[1]["median"] for p in pts]
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=s,
                        linewidth=2.2 if s.startswith("ringio") else 1.2)
        ax.set_xscale("log")
        ticks = sorted({g["cell"][xkey] for g in gs})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlim(min(ticks) / 1.6, max(ticks) * 1.6)
        ax.set_xlabel(xkey)
        ax.set_ylabel(f"throughput ({UNIT.get(scen, 'req/s')}), median, bars min-max")
        ax.set_title(_title(scen, key))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, outdir, f"throughput-{scen}.png")


def throughput_bars(plt, groups, scen, xkey, outdir):
    """One grid point (the quick matrix): a bar per server, min-max bars."""
    cells = list(dict.fromkeys(g["cell_label"] for g in groups))
    fig, axes = _bar_axes(plt, groups, cells)
    for ax, cell in zip(axes, cells):
        gs = [g for g in groups if g["cell_label"] == cell]
        t = [g["throughput"] for g in gs]
        ax.bar([g["subject"] for g in gs], [x["median"] for x in t],
               color=["tab:blue" if g["subject"].startswith("ringio") else "tab:gray" for g in gs],
               yerr=[[x["median"] - x["min"] for x in t], [x["max"] - x["median"] for x in t]], capsize=4)
        ax.set_ylabel(f"throughput ({_unit(scen, gs[0])}), median, bars min-max")
        ax.set_title(f"{scen} {cell}")
        ax.tick_params(axis="x", rotation=45)
        ax.grid(True, axis="y", alpha=0.3)
    return _save(plt, fig, outdir, f"throughput-{scen}.png")


def cpu(plt, res, scen, outdir):
    # Memory cells have their own plot; their CPU per connection is in the report.
    groups = [g for g in res["summary"] if g["scenario"] == scen and g.get("server_us") and "memory" not in g]
    if scen == "client-cost":
        groups = [g for g in res["summary"] if g["scenario"] == scen and g.get("client_us")]
    if not groups:
        return None
    cells = list(dict.fromkeys(g["cell_label"] for g in groups))
    fig, axes = _bar_axes(plt, groups, cells)
    for ax, cell in zip(axes, cells):
        gs = [g for g in groups if g["cell_label"] == cell]
        names = [g["subject"] for g in gs]
        if scen == "client-cost":
            ax.bar(names, [g["client_us"]["median"] for g in gs], color="tab:purple")
            ax.set_ylabel("client CPU us per round trip")
        else:
            user = [g["server_user_us"]["median"] for g in gs]
            sys_ = [g["server_sys_us"]["median"] for g in gs]
            ax.bar(names, user, label="user")
            ax.bar(names, sys_, bottom=user, label="system")
            tot = [g["server_us"] for g in gs]
            ax.errorbar(names, [t["median"] for t in tot], fmt="none", ecolor="black", capsize=4,
                        yerr=[[t["median"] - t["min"] for t in tot], [t["max"] - t["median"] for t in tot]],
                        label="total min-max")
            for i, g in enumerate(gs):
                if g.get("syscalls_per_op"):
                    ax.annotate(f"{g['syscalls_per_op']['median']:.2f} sc/op", (i, tot[i]["max"]),
                                textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7)
            ax.set_ylim(0, max(t["max"] for t in tot) * 1.15)  # room for the labels
            ax.set_ylabel("server CPU us per " + ("MB" if gs[0]["cell"].get("load") == "download" else "operation")
                          + " (median)")
            ax.legend(fontsize=8, loc="lower right")
        ax.set_title(f"{scen} {cell}")
        ax.tick_params(axis="x", rotation=45)
        ax.grid(True, axis="y", alpha=0.3)
    return _save(plt, fig, outdir, f"cpu-{scen}.png")


def latency(plt, res, scen, outdir):
    groups = [g for g in res["summary"] if g["scenario"] == scen and g.get("latency_us")]
    if not groups:
        return None
    cells = list(dict.fromkeys(g["cell_label"] for g in groups))
    fig, axes = _bar_axes(plt, groups, cells)
    for ax, cell in zip(axes, cells):
        gs = [g for g in groups if g["cell_label"] == cell]
        pcts = [p for p in PCTS if any(p in g["latency_us"] for g in gs)]
        width = 0.8 / max(1, len(pcts))
        for i, p in enumerate(pcts):
            xs = [j + i * width for j in range(len(gs))]
            ax.bar(xs, [g["latency_us"].get(p, 0) for g in gs], width, label=p)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(gs))], [g["subject"] for g in gs], rotation=45)
        ax.set_yscale("log")
        low = min((v for g in gs for v in g["latency_us"].values() if v > 0), default=1)
        ax.set_ylim(bottom=low / 2)
        ax.set_ylabel("latency us (median over repeats)")
        ax.set_title(f"{scen} {cell}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, outdir, f"latency-{scen}.png")


def memory(plt, res, scen, outdir):
    """Per memory cell: RSS before, loaded and 3 s after the close per server
    (MiB), with the KiB per connection written above."""
    groups = [g for g in res["summary"] if g["scenario"] == scen and g.get("memory")]
    if not groups:
        return None
    cells = list(dict.fromkeys(g["cell_label"] for g in groups))
    fig, axes = _bar_axes(plt, groups, cells)
    bars = [("before_kib", "before"), ("loaded_kib", "loaded"), ("after_kib", "3 s after close")]
    for ax, cell in zip(axes, cells):
        gs = [g for g in groups if g["cell_label"] == cell]
        width = 0.8 / len(bars)
        for i, (key, name) in enumerate(bars):
            vals = [(g["memory"][key]["median"] / 1024 if g["memory"].get(key) else 0) for g in gs]
            ax.bar([j + i * width for j in range(len(gs))], vals, width, label=name)
        for j, g in enumerate(gs):
            pc = g["memory"].get("per_conn_kib")
            top = max((g["memory"][k]["median"] / 1024 for k, _ in bars if g["memory"].get(k)), default=0)
            if pc:
                ax.annotate(f"{pc['median']:.1f} KiB/conn", (j + width, top), textcoords="offset points",
                            xytext=(0, 4), ha="center", fontsize=7)
        ax.set_xticks([j + width for j in range(len(gs))], [g["subject"] for g in gs], rotation=45)
        ax.set_ylabel("server RSS MiB (median)")
        ax.set_title(f"{scen} {cell}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, outdir, f"memory-{scen}.png")


def _bar_axes(plt, groups, cells):
    """One panel per cell, stacked vertically, as wide as the bars need."""
    per_cell = max(1, len(groups) // max(1, len(cells)))
    fig, axes = plt.subplots(len(cells), 1, figsize=(max(6.0, 0.9 * per_cell + 2.5), 4.2 * len(cells)),
                             squeeze=False)
    return fig, [row[0] for row in axes]


def _save(plt, fig, outdir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=90)
    plt.close(fig)
    return name


def main(argv):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    outdir = argv[1]
    with open(os.path.join(outdir, "results.json")) as f:
        res = json.load(f)
    for scen in res["scenarios"]:
        for fn in (throughput, cpu, latency, memory):
            name = fn(plt, res, scen, outdir)
            if name:
                print(name)


if __name__ == "__main__":
    main(sys.argv)
