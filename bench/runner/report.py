# SPDX-License-Identifier: Apache-2.0
"""report.md from the results (the same dict that goes to results.json)."""
from . import fileio, hiredis, scenarios, servers, spawn, switch, verdict

DASH = "–"


def num(v, digits=3):
    """Short human number: 98200 -> '98.2k', 3.123 -> '3.12', None -> '-'."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.{digits - 1}f}M" if a < 1e7 else f"{v / 1e6:.1f}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}k"
    if a >= 1e3:
        return f"{v / 1e3:.2f}k"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def spread_text(s):
    if not s:
        return "-"
    if s["n"] == 1:
        return num(s["median"])
    return f"{num(s['median'])} ({num(s['min'])}{DASH}{num(s['max'])})"


def ratio_text(r):
    return "-" if r is None else f"{r:.2f}x"


def cpu_text(g):
    if not g.get("server_us"):
        return "-"
    u, s = g["server_user_us"], g["server_sys_us"]
    return f"{num(g['server_us']['median'])} ({num(u['median'] if u else None)}+{num(s['median'] if s else None)})"


def latency_text(lat):
    """'p50 285 / p99 387' (or the mean where there is no p50)."""
    first = "p50" if "p50" in lat else "mean" if "mean" in lat else None
    keys = [k for k in (first, "p99") if k and k in lat]
    return " / ".join(f"{k} {num(lat[k])}" for k in keys) if keys else "-"


def resolution_text(res, name):
    """How finely the CPU readings resolve CPU per op in this scenario."""
    cpu = sorted(r["server_cpu"]["user_s"] + r["server_cpu"]["sys_s"] for r in res["runs"]
                 if r["scenario"] == name and r.get("ok") and r.get("kind") == "measure" and r.get("server_cpu"))
    if not cpu:
        return None
    med = cpu[len(cpu) // 2]
    tick = 1.0 / res["environment"].get("clk_tck", 100)
    if med <= 0:
        return "Server CPU per timed run: below one clock tick; CPU per op is not resolved."
    return (f"Server CPU per timed run: median {med:.2f} s, so one clock tick ({tick * 1000:.0f} ms) "
            f"is {tick / med * 100:.1f}% of it.")


def rounds_text(repeats, per_scenario=None):
    """'6 repeats' or '6 repeats (pingpong, echo: 8)'."""
    text = f"{repeats} repeats"
    other = {}
    for name, n in (per_scenario or {}).items():
        if n != repeats:
            other.setdefault(n, []).append(name)
    if other:
        text += " (" + "; ".join(f"{', '.join(names)}: {n}" for n, names in other.items()) + ")"
    return text


def met_text(m):
    return {True: "yes", False: "**no**", None: "n/a", verdict.NOISE: "within noise"}[m]


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def _plan_rows(res):
    rows = []
    for p in res["plan"]:
        ran = [c["label"] for c in p["cells"] if c["status"] == "run"]
        marked = [f"{c['label']} ({c['reason']})" for c in p["cells"] if c["status"] != "run"]
        rows.append([p["scenario"], f"`{p['client_cmd']}`" if p.get("client_cmd") else "-",
                     "; ".join(ran) or "none", "; ".join(marked) or "-",
                     ", ".join(p["subjects"]) or "none"])
    return rows


def method(res):
    env = res["environment"]
    mode = res["mode"]
    lines = [
        f"- Mode `{mode}`, {rounds_text(res['repeats'], res.get('scenario_rounds'))}. "
        "Within each grid cell the servers run in turn "
        f"(A B C ... A B C ...), a fresh server process per run on a free port of 127.0.0.1.",
        f"- Servers are pinned to CPUs {env['server_cpus']} and clients (and perf) to CPUs {env['client_cpus']} "
        "with sched_setaffinity (what taskset does)." if env["server_cpus"] != env["client_cpus"] else
        "- **Server and client share the only CPU**: throughputs are not comparable with other machines.",
        "- Server CPU per operation: user and system time of the server process (all threads; nginx: master "
        "plus workers) from /proc/PID/stat, read right before the client starts and right after it exits, "
        f"divided by the operations the client reports. Readings are in clock ticks of 1/{env['clk_tck']} s; "
        "user/system split is sampled by the kernel. The client's CPU per operation comes from its rusage.",
        "- Throughput is the client's own figure (computed by the client over its measuring window). "
        "Ratios (`x`) are ratios of medians to the same cell's "
        f"`{res.get('baseline', servers.BASELINE)}`; for CPU and syscalls lower is better.",
    ]
    if res.get("syscalls_measured"):
        lines.append("- Syscalls per operation: one extra run per server and cell after the timed repeats, "
                     "with `perf stat -e raw_syscalls:sys_enter -p PID` counting exactly the load window. "
                     "These runs are not part of the throughput and CPU medians (the tracepoint adds about "
                     "0.15 us to every syscall).")
    else:
        lines.append(f"- Syscalls per operation: not measured ({env['perf']}).")
    busy = busy_text(res)
    if busy:
        lines.append(f"- {busy}")
    for n in res.get("notes", []):
        lines.append(f"- {n}")
    return "\n".join(lines)


def busy_text(res):
    """What else the machine did during the timed runs, from /proc/stat."""
    other, steal = [], []
    for r in res["runs"]:
        if r.get("ok") and r.get("kind") == "measure" and r.get("machine") and r.get("wall_s"):
            other.append(max(0.0, r["machine"]["other_s"]) / r["wall_s"])
            steal.append(max(0.0, r["machine"]["steal_s"]) / r["wall_s"])
    if not other:
        return None
    other.sort()
    steal.sort()
    med, top = other[len(other) // 2], other[-1]
    text = (f"Other work on the machine during the timed runs (all CPU time minus server and client, from "
            f"/proc/stat): median {med * 100:.0f}% of one CPU, max {top * 100:.0f}%; "
            f"hypervisor steal median {steal[len(steal) // 2] * 100:.0f}%.")
    if med > 0.1:
        text += " **The machine was busy with other work: throughput is unreliable, CPU per op less so.**"
    return text


def scenario_section(res, name):
    if name == scenarios.SWITCH:
        return switch.section(res["switch"]) if res.get("switch") else "### switch\n\nNot run."
    if name == scenarios.FILEIO:
        return fileio.section(res["fileio"]) if res.get("fileio") else "### fileio\n\nNot run."
    if name == scenarios.SPAWN:
        return spawn.section(res["spawn"]) if res.get("spawn") else "### spawn\n\nNot run."
    if name == scenarios.HIREDIS:
        return hiredis.section(res["hiredis"]) if res.get("hiredis") else "### hiredis\n\nNot run."
    scen = scenarios.SCENARIOS[name]
    groups = [g for g in res["summary"] if g["scenario"] == name]
    p = next((p for p in res["plan"] if p["scenario"] == name), None)
    out = [f"### {name}", "", scen.what + "."]
    if p and p.get("server_note"):
        out += ["", p["server_note"]]
    if not groups:
        why = [s["reason"] for s in res["skipped"] if s["scenario"] == name]
        out += ["", f"Not run: {why[0] if why else 'nothing selected'}."]
        return "\n".join(out)
    base = res.get("baselines", {}).get(name, servers.BASELINE)
    # One table per kind of cell: http-static mixes req/s, GB/s and memory cells.
    blocks = {}
    for g in groups:
        kind = "memory" if "memory" in g else scenarios.unit_of(name, g["cell"])
        blocks.setdefault(kind, []).append(g)
    for kind, gs in blocks.items():
        if kind == "memory":
            out += ["", memory_table(gs, base)]
        else:
            out += ["", throughput_table(scen, gs, base, *kind)]
    if "memory" in blocks:
        out += ["", MEMORY_NOTE]
    resolution = resolution_text(res, name)
    if resolution and len(blocks) > ("memory" in blocks):
        out += ["", resolution]
    return "\n".join(out)


def throughput_table(scen, groups, base, unit, op):
    who = "client" if scen.subjects_are_clients else "server"
    cost = scen.subjects_are_clients
    header = ["cell", who, f"throughput {unit} median (min{DASH}max)", f"x {base}",
              f"server CPU us/{op} (usr+sys)", "x", f"syscalls/{op}",
              f"client CPU us/{op}" + (f" median (min{DASH}max)" if cost else "")]
    header += (["x"] if cost else []) + ["latency us", "server CPU use", "errors", "runs"]
    rows = []
    for g in groups:
        r = g["ratio"]
        row = [g["cell_label"], g["subject"], spread_text(g["throughput"]), ratio_text(r.get("throughput")),
               cpu_text(g), ratio_text(r.get("server_us")),
               num(g["syscalls_per_op"]["median"]) if g["syscalls_per_op"] else "-"]
        if cost:
            row += [spread_text(g["client_us"]), ratio_text(r.get("client_us"))]
        else:
            row += [num(g["client_us"]["median"]) if g["client_us"] else "-"]
        rows.append(row + [latency_text(g["latency_us"]),
                     f"{g['utilization']['median'] * 100:.0f}%" if g.get("utilization") else "-",
                     g["errors"], f"{g['runs_ok']}" + (f" ({len(g['failed'])} failed)" if g["failed"] else "")])
    return table(header, rows)


MEMORY_NOTE = ("RSS is VmRSS summed over the server's processes (nginx: master and workers), in MiB: the "
               "reading before the load, the loaded one (http-idle, echo-idle, tls-idle and ws-idle: every connection idle, 1 s after "
               "the last response; slow readers: the highest reading while they read), and 1 s and 3 s after the "
               "client closed every connection. KiB per connection = (loaded - before) / connections open; "
               "after/before uses the 3 s reading. Kernel memory (socket buffers, the page cache) is not in RSS.")


def mib(kib):
    return None if kib is None else kib / 1024.0


def _med(g, key):
    s = g["memory"].get(key)
    return s["median"] if s else None


LOADED = {"idle": "RSS all idle", "echo-idle": "RSS all idle", "tls-idle": "RSS all idle", "ws-idle": "RSS all idle",
          "slow": "RSS peak"}


def memory_table(groups, base):
    loads = {g["cell"].get("load") for g in groups}
    loaded = LOADED.get(loads.pop()) if len(loads) == 1 else None
    header = ["cell", "server", "RSS before MiB", f"{loaded or 'RSS loaded'} MiB median (min{DASH}max)", f"x {base}",
              "RSS after close MiB (1 s / 3 s)", "after/before",
              f"KiB per connection median (min{DASH}max)", f"x {base}",
              "server CPU us/connection", "failed connections", "runs"]
    rows = []
    for g in groups:
        m, r = g["memory"], g["ratio"]
        loaded = m.get("loaded_kib")
        loaded_mib = {k: mib(loaded[k]) for k in ("median", "min", "max")} | {"n": loaded["n"]} if loaded else None
        conns = int(g["cell"].get("connections", 0)) * g["runs_ok"]
        rows.append([g["cell_label"], g["subject"], num(mib(_med(g, "before_kib"))), spread_text(loaded_mib),
                     ratio_text(r.get("loaded_kib")),
                     f"{num(mib(_med(g, 'after1_kib')))} / {num(mib(_med(g, 'after_kib')))}",
                     ratio_text(_med(g, "after_ratio")), spread_text(m.get("per_conn_kib")),
                     ratio_text(r.get("per_conn_kib")),
                     num(g["server_us"]["median"]) if g.get("server_us") else "-",
                     f"{g['errors']} of {conns}",
                     f"{g['runs_ok']}" + (f" ({len(g['failed'])} failed)" if g["failed"] else "")])
    return table(header, rows)


def memory_progress(m):
    """One line of the runner's log for a memory run."""
    return (f"RSS before {num(mib(m['before_kib']))} MiB, loaded {num(mib(m['loaded_kib']))} MiB, "
            f"after {num(mib(m['after_kib']))} MiB, {num(m['per_conn_kib'])} KiB/connection, "
            f"{m['failed']} of {m['connections']} connections failed")


def render(res):
    env = res["environment"]
    out = [f"# ringio benchmark report ({res['mode']})", "",
           f"Started {res['started']}, took {res['elapsed_s'] / 60:.1f} min. Command: `{res['command']}`. "
           f"Commit `{env.get('git_commit')}`.", "",
           "## What was run", "",
           table(["scenario", "client command", "cells run", "cells not run", "subjects"], _plan_rows(res)), "",
           method(res), "",
           "## ringio-uring targets", "",
           table(["target", "cell", "measured", "met?"],
                 [[t["target"], t["cell"], t["measured"], met_text(t["met"])] for t in res["targets"]]), "",
           verdict.RULE, "",
           "## Results", "",
           "Throughput and CPU columns show the median and, in brackets, min" + DASH + "max over the repeats. "
           "CPU us/op is server user+system time per operation (user+sys in brackets). "
           "\"server CPU use\" is server CPU time over wall time: near 100% per server thread means the "
           "server was the bottleneck, well below means the client was.", ""]
    for name in res["scenarios"]:
        out += [scenario_section(res, name), ""]
    if res["skipped"]:
        out += ["## Not run", ""]
        out += [f"- {s['scenario']}" + (f" {s['cell']}" if s.get("cell") else "")
                + (f" / {s['subject']}" if s.get("subject") else "") + f": {s['reason']}" for s in res["skipped"]]
        out.append("")
    failed = [r for r in res["runs"] if not r.get("ok")]
    if failed:
        out += ["## Failed runs", ""]
        for r in failed[:40]:
            which = f"repeat {r['repeat']}" if r.get("repeat") else "syscall run"
            out.append(f"- {r['scenario']} {r['cell_label']} / {r['subject']} ({which}): "
                       f"{(r.get('error') or '').strip()}")
        if len(failed) > 40:
            out.append(f"- ... and {len(failed) - 40} more (results.json has them all)")
        out.append("")
    out += ["## Plots", ""]
    plots = res.get("plots", {})
    if plots.get("files"):
        out += [f"![{f}]({f})" for f in plots["files"]]
    else:
        out.append(f"Plots skipped: {plots.get('note', 'not made')}.")
    out += ["", "## Environment", "", table(["", ""], env_rows(res)), "",
            "Every raw run (commands, CPU readings, client output figures) is in `results.json`.", ""]
    return "\n".join(out)


def env_rows(res):
    e = res["environment"]
    c = e.get("compiler", {})
    rows = [
        ["kernel", e.get("kernel")],
        ["CPU", f"{e.get('cpu')}" + (" (virtual machine)" if e.get("virtualized") else "")],
        ["cores", f"{e.get('cores')} (usable {len(e.get('usable_cpus', []))})"],
        ["memory", f"{e.get('memory_gib')} GiB"],
        ["compiler (ringio)", f"{c.get('version') or c.get('cxx') or c.get('error')}, {c.get('build_type', '')} "
                              f"`{c.get('flags', '')}`"],
        ["peers", f"C++ peers {c.get('peers_flags', '')}; tokio {e.get('tokio')} ({e.get('rustc')})"],
        ["liburing", e.get("liburing")],
        ["asio", e.get("asio")],
        ["nginx / wrk / ab", f"{e.get('nginx')} / {e.get('wrk')} / {e.get('ab')}"],
        ["h2o", f"{e.get('h2o')}"],
    ]
    for name, line in sorted(res.get("backend_lines", {}).items()):
        rows.append([f"{name} start-up line", f"`{line}`"])
    rows += [
        ["server / client CPUs", f"{e.get('server_cpus')} / {e.get('client_cpus')}"],
        ["open files limit", e.get("nofile")],
        ["ephemeral ports", e.get("ephemeral_ports")],
        ["syscall counting", e.get("perf")],
        ["git commit", e.get("git_commit")],
        ["python", e.get("python")],
    ]
    return rows
