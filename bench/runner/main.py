# SPDX-License-Identifier: Apache-2.0
"""bench/run: plan the matrix, run it, write results.json, plots and report.md."""
import argparse
import datetime
import json
import os
import shutil
import sys
import time

from . import (clients, env, execute, fileio, hiredis, measure, procs, report, scenarios, servers, spawn, stats,
               switch, targets, venv)

USAGE_EPILOG = """\
servers:   """ + ", ".join(servers.ORDER) + """
           (named only: """ + ", ".join(list(servers.VARIANTS) + list(servers.HOOKED) + [servers.DYCO]) + """)
scenarios: """ + ", ".join(scenarios.ORDER) + """

`make bench` runs `bench/run` (quick); `make bench FULL=1` adds --full.
Results go to bench/results/<timestamp>/ (report.md, results.json, *.png)."""


WS_SCENARIOS = ["ws-echo", "ws-idle"]
WS_DEFAULT_SERVERS = ["ringio-uring", "tokio-percore", "beast"]


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/run", description="Side-by-side benchmark of ringio and its peers.",
                                 epilog=USAGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true",
                   help="the quick default (default): pingpong, echo, churn and http-wrk against the servers "
                        f"their targets name, {scenarios.QUICK_REPEATS} or {max(scenarios.QUICK_ROUNDS.values())} "
                        f"rounds of {scenarios.QUICK_SECONDS} s, "
                        "under 5 minutes on 2 cores")
    g.add_argument("--full", action="store_true", help="the full grids of the issue")
    g.add_argument("--websocket", action="store_true",
                   help="only the WebSocket scenarios, full grids: --full --scenarios " + ",".join(WS_SCENARIOS)
                        + " --servers " + ",".join(WS_DEFAULT_SERVERS) + " (each overridable)")
    ap.add_argument("--servers", help="comma-separated servers (default: each quick scenario's own, all with --full)")
    ap.add_argument("--metrics-cost", action="store_true",
                    help="servers: ringio with its metrics on and off (" + ",".join(servers.METRICS_COST) + ")")
    ap.add_argument("--scenarios", help="comma-separated scenarios (default: the quick default's, all with --full)")
    ap.add_argument("--repeats", type=int, help="timed runs (rounds) per server and cell, every scenario "
                    f"(default: quick {scenarios.QUICK_REPEATS}, "
                    + ", ".join(f"{n} {r}" for n, r in scenarios.QUICK_ROUNDS.items())
                    + f"; full {scenarios.FULL_REPEATS})")
    ap.add_argument("--seconds", type=float, help="length of each timed run "
                    f"(default: quick {scenarios.QUICK_SECONDS}, full {scenarios.FULL_SECONDS})")
    ap.add_argument("--out", help="results directory (default bench/results/<timestamp>)")
    ap.add_argument("--list", action="store_true", help="show servers, clients and cells, run nothing")
    ap.add_argument("--no-syscalls", action="store_true", help="skip the perf runs that count syscalls")
    ap.add_argument("--no-plots", action="store_true", help="skip bench/.venv and the PNG plots")
    ap.add_argument("--build-dir", default="build/bench", help="ringio/peer build directory (default build/bench)")
    ap.add_argument("--report-from", metavar="DIR", help="rewrite report.md and plots from DIR/results.json")
    ap.add_argument("--fileio-backends", default="uring", metavar="B1,B2",
                    help="ringio backends in fileio (and the first one in spawn): "
                         + ", ".join(fileio.BACKENDS) + " (default uring)")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=V1,V2",
                    help="keep only grid cells whose KEY is one of the values (repeatable), "
                         "e.g. --where connections=50,1000")
    a = ap.parse_args(argv)
    if a.metrics_cost and a.servers:
        ap.error("--metrics-cost chooses the servers: give it or --servers, not both")
    if a.websocket:
        a.full = True
        a.servers = a.servers or ",".join(WS_DEFAULT_SERVERS)
        a.scenarios = a.scenarios or ",".join(WS_SCENARIOS)
    a.servers_named = bool(a.servers) or a.metrics_cost  # (else churn adds scenarios.DEFAULT_EXTRA)
    a.named_servers = {n.strip() for n in (a.servers or "").split(",")}  # as given, for the skip lines
    a.servers = _names(ap, a.servers, servers.KNOWN, "server",
                       servers.METRICS_COST if a.metrics_cost else servers.ORDER)
    a.scenarios = _names(ap, a.scenarios, scenarios.ORDER, "scenario",
                         scenarios.ORDER if a.full else [s for s in scenarios.ORDER if s in scenarios.QUICK_SERVERS])
    # The quick default runs each of its scenarios against its own servers
    # (scenarios.QUICK_SERVERS), unless --servers names them; other scenarios get them all.
    a.scenario_servers = {}
    if not a.full and not a.servers_named:
        a.scenario_servers = {n: list(scenarios.QUICK_SERVERS.get(n, a.servers)) for n in a.scenarios}
        a.servers = [s for s in servers.KNOWN if any(s in v for v in a.scenario_servers.values())]
        a.servers_named = True  # churn's extra servers are in its own list
    a.scenario_rounds = {}
    if a.repeats is None:
        a.repeats = scenarios.FULL_REPEATS if a.full else scenarios.QUICK_REPEATS
        if not a.full:
            a.scenario_rounds = {n: r for n, r in scenarios.QUICK_ROUNDS.items() if n in a.scenarios}
    if a.repeats < 1:
        ap.error("--repeats must be at least 1")
    a.fileio_backends = _names(ap, a.fileio_backends, fileio.BACKENDS, "backend")
    a.where_filter = {}
    for w in a.where:
        key, eq, vals = w.partition("=")
        if not eq or not key or not vals:
            ap.error(f"--where wants KEY=V1,V2, got '{w}'")
        a.where_filter[key.strip()] = {v.strip() for v in vals.split(",") if v.strip()}
    return a


def _names(ap, text, known, what, default=None):
    if not text:
        return list(default if default is not None else known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        ap.error(f"unknown {what}(s): {', '.join(bad)} (known: {', '.join(known)})")
    return [n for n in known if n in names]  # canonical order


def log(msg):
    print(msg, flush=True)


def baseline_of(scenario, subjects=()):
    scen = scenarios.SCENARIOS.get(scenario)
    return scen.subject_clients[0] if scen and scen.subjects_are_clients else servers.baseline(subjects)


def make_plan(a, layout, ncpus, server_cpus, nofile, ports):
    """Per scenario: subjects, cells (run or why not), and what is skipped."""
    plan, skipped = [], []
    for name in a.scenarios:
        if name == scenarios.SWITCH:
            cmd = switch.command(layout, a.full, a.repeats)
            why = switch.available(layout)
            if why:
                skipped.append({"scenario": name, "reason": f"skipped: {why}"})
            plan.append({"scenario": name, "subjects": [] if why else switch.SUBJECTS,
                         "cells": [], "client_cmd": " ".join([os.path.basename(cmd[0])] + cmd[1:])})
            continue
        if name == scenarios.FILEIO:
            why = fileio.available(layout)
            if why:
                skipped.append({"scenario": name, "reason": f"skipped: {why}"})
            todo = [c for c in fileio.cells(a.full, a.seconds) if fileio.matches(c, a.where_filter)]
            plan.append({"scenario": name, "subjects": [] if why else fileio.subjects(a.fileio_backends),
                         "cells": [], "file_cells": [fileio.label(c) for c in todo],
                         "run_seconds": 0 if why else fileio.round_seconds(todo, fileio.subjects(a.fileio_backends)),
                         "client_cmd": "file_bench / fio --ioengine=io_uring,psync / tokio_file_bench"})
            continue
        if name == scenarios.SPAWN:
            why = spawn.available(layout)
            if why:
                skipped.append({"scenario": name, "reason": f"skipped: {why}"})
            for s, w in spawn.missing(layout).items():
                if s != "ringio":
                    skipped.append({"scenario": name, "subject": s, "reason": f"skipped: {w}"})
            plan.append({"scenario": name, "subjects": [] if why else list(spawn.SUBJECTS), "cells": [],
                         "spawn_cells": [spawn.label(c) for c in spawn.cells(a.full)
                                         if fileio.matches(c, a.where_filter)],
                         "run_seconds": 0 if why else sum(len(spawn.SUBJECTS) * c["count"] / 800
                                                         for c in spawn.cells(a.full)
                                                         if fileio.matches(c, a.where_filter)),
                         "client_cmd": "spawn_bench / tokio_spawn_bench"})
            continue
        if name == scenarios.HIREDIS:
            why = hiredis.available(layout)
            if why:
                skipped.append({"scenario": name, "reason": f"skipped: {why}"})
            hcells = [c for c in hiredis.cells(a.full, a.seconds)
                      if not any(k in c and str(c[k]) not in vs for k, vs in a.where_filter.items())]
            for c in hcells:
                reason = hiredis.mark(c, nofile)
                if reason:
                    skipped.append({"scenario": name, "cell": hiredis.label(c), "reason": reason})
            plan.append({"scenario": name, "subjects": [] if why else hiredis.SUBJECTS, "cells": [],
                         "hiredis_cells": [hiredis.label(c) for c in hcells],
                         "client_cmd": "hiredis_bench / hiredis_bench_hooked against redis-server",
                         "run_seconds": 0 if why or not hcells else hiredis.round_seconds(hcells)})
            continue
        scen = scenarios.SCENARIOS[name]
        entry = {"scenario": name, "subjects": [], "cells": [], "client_cmd": None,
                 "rounds": getattr(a, "scenario_rounds", {}).get(name, a.repeats)}
        usable = []
        extra = [] if getattr(a, "servers_named", True) else scenarios.DEFAULT_EXTRA.get(name, [])
        chosen = getattr(a, "scenario_servers", {}).get(name, a.servers)
        for s in chosen + [x for x in extra if x not in chosen]:
            if not servers.supports(s, scen.mode):
                continue
            try:
                servers.check(layout, s, scen.mode)
                usable.append(s)
            except servers.Unavailable as e:
                if s in scenarios.EXTRA_IF_BUILT and s not in getattr(a, "named_servers", ()):
                    continue  # a default server built outside ringio's build, and not built
                if not scen.subjects_are_clients:
                    skipped.append({"scenario": name, "subject": s, "reason": f"skipped: {e}"})
        if scen.subjects_are_clients:
            pref = [s for s in [servers.BASELINE] + usable if s in usable]
            entry["server"] = pref[0] if pref else None
            if not entry["server"]:
                skipped.append({"scenario": name,
                                "reason": f"skipped: no selected server with a {scen.mode} mode is built"})
            for c in scen.subject_clients:
                why = clients.available(layout, c)
                if why:
                    skipped.append({"scenario": name, "subject": c, "reason": f"skipped: {why}"})
                elif entry["server"]:
                    entry["subjects"].append(c)
            entry["server_note"] = f"Server: `{entry['server']}`, {scen.mode} mode." if entry["server"] else None
        else:
            why = clients.available(layout, scen.client)
            if why:
                skipped.append({"scenario": name, "reason": f"skipped: {why}"})
            else:
                entry["subjects"] = usable
        for cell in scenarios.cells(name, a.full, a.seconds):
            if any(k in cell and str(cell[k]) not in vs for k, vs in a.where_filter.items()):
                continue
            lab = scenarios.label(name, cell)
            reason, notes = scenarios.mark(name, cell, ncpus, nofile, ports, len(server_cpus))
            own = scenarios.client_of(name, cell)
            if not reason and not scen.subjects_are_clients and own != scen.client and clients.available(layout, own):
                reason = f"skipped: {clients.available(layout, own)}"
            entry["cells"].append({"cell": cell, "label": lab + "".join(f" [{n}]" for n in notes),
                                   "key": lab, "status": "run" if not reason else "marked", "reason": reason})
            if reason:
                skipped.append({"scenario": name, "cell": lab, "reason": reason})
        cmds = []
        for c in entry["cells"]:
            client = scen.subject_clients[0] if scen.subjects_are_clients else scenarios.client_of(name, c["cell"])
            cmd = clients.command(layout, client, c["cell"], "PORT")
            cmd = " ".join([os.path.basename(cmd[0])] + [str(x) for x in cmd[1:]])
            kind = (client, c["cell"].get("load"))
            if kind not in [k for k, _ in cmds]:  # the first cell of each client and load
                cmds.append((kind, cmd))
        if cmds:
            entry["client_cmd"] = "; ".join(cmd for _, cmd in cmds)
        if not entry["subjects"]:
            for c in entry["cells"]:
                c["status"] = "skipped" if c["status"] == "run" else c["status"]
                c["reason"] = c["reason"] or "no subject to run"
        plan.append(entry)
    return plan, skipped


def estimate(plan, repeats, syscalls):
    """Seconds the plan takes, start-up included."""
    total = float(scenarios.STARTUP_SECONDS)
    for p in plan:
        for c in p["cells"]:
            if c["status"] == "run":
                one = scenarios.expected_seconds(p["scenario"], c["cell"]) + 0.3
                probe = syscalls and scenarios.counts_syscalls(p["scenario"], c["cell"])
                total += len(p["subjects"]) * one * (p.get("rounds", repeats) + (0.7 if probe else 0))
        total += p.get("run_seconds", 0) * repeats  # fileio, spawn, hiredis: one round's estimate
    return total


def run_plan(a, ctx, plan, runs, skipped):
    probe = lambda p, c: ctx.perf and scenarios.counts_syscalls(p["scenario"], c["cell"])  # noqa: E731
    todo = sum(len(p["subjects"]) * (p.get("rounds", a.repeats) + (1 if probe(p, c) else 0))
               for p in plan for c in p["cells"] if c["status"] == "run")
    done = 0
    for p in plan:
        if p["scenario"] in scenarios.STANDALONE:
            continue  # ran before the plan (switch.run): it has no cells
        scen = scenarios.SCENARIOS[p["scenario"]]
        ctx.cost_server = p.get("server")
        broken = {}
        for c in [c for c in p["cells"] if c["status"] == "run"]:
            passes = [(r + 1, "measure") for r in range(p.get("rounds", a.repeats))] + \
                ([(None, "syscalls")] if probe(p, c) else [])
            for rep, kind in passes:
                for subj in p["subjects"]:
                    done += 1
                    if subj in broken:
                        continue
                    cell = c["cell"] if kind == "measure" else scenarios.probe_cell(scen.name, c["cell"])
                    rec = execute.run_one(ctx, scen, cell, subj, rep, kind)
                    runs.append(rec)
                    log(f"[{done}/{todo}] {scen.name} {c['key']} {subj} "
                        f"{'r' + str(rep) if rep else 'syscalls'}: {progress(rec, scen)}")
                    if rec.get("start_failed"):
                        broken[subj] = rec["error"]
                        skipped.append({"scenario": scen.name, "subject": subj,
                                        "reason": f"stopped after a failed start: {rec['error']}"})


def progress(rec, scen):
    if not rec.get("metrics"):
        return "FAILED: " + (rec.get("error") or "?")
    m, po = rec["metrics"], rec.get("per_op", {})
    if m.get("memory"):
        return report.memory_progress(m["memory"]) + (", FAILED: " + rec["error"] if rec.get("error") else "")
    parts = [f"{report.num(m['throughput'])} {scenarios.unit_of(scen.name, rec['cell'])[0]}"]
    if "server_us" in po:
        parts.append(f"server {po['server_us']:.2f} us/op")
    if "client_us" in po:
        parts.append(f"client {po['client_us']:.2f} us/op")
    if "syscalls" in po:
        parts.append(f"{po['syscalls']:.2f} syscalls/op")
    if m.get("errors"):
        parts.append(f"{m['errors']} errors")
    if rec.get("error"):
        parts.append("FAILED: " + rec["error"])
    return ", ".join(parts)


def finish(res, outdir, bench_dir, want_plots):
    """Summary, targets, results.json, plots and report.md."""
    res["summary"] = stats.summarize(res["runs"], lambda s: baseline_of(s, res.get("servers", ())))
    res["baselines"] = {s: baseline_of(s, res.get("servers", ())) for s in res["scenarios"]}
    res["targets"] = targets.evaluate(res["summary"], res["skipped"], res["mode"] == "full",
                                     res["scenarios"], res.get("scenario_servers") or res["servers"])
    hiredis.resummarize(res.get("hiredis"))
    res["targets"] += hiredis.targets(res.get("hiredis"), scenarios.HIREDIS in res["scenarios"])
    os.makedirs(outdir, exist_ok=True)
    write_json(res, outdir)
    if want_plots and res.get("venv_python"):
        files, why = venv.plot(res["venv_python"], bench_dir, outdir)
        res["plots"] = {"files": files, "note": why} if files else {"files": [], "note": why or "nothing to plot"}
    elif not res.get("plots"):
        res["plots"] = {"files": [], "note": "--no-plots" if not want_plots else res.get("venv_note", "no venv")}
    write_json(res, outdir)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write(report.render(res))


def write_json(res, outdir):
    tmp = os.path.join(outdir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1, default=str)
    os.replace(tmp, os.path.join(outdir, "results.json"))


def list_all(a, layout, ncpus, server_cpus, nofile, ports):
    plan, skipped = make_plan(a, layout, ncpus, server_cpus, nofile, ports)
    log(f"{'full' if a.full else 'quick'} matrix, {report.rounds_text(a.repeats, a.scenario_rounds)}; "
        f"server CPUs {server_cpus}, {ncpus} CPUs\n")
    log("servers:")
    for s in a.servers:
        modes = []
        for m in ("echo", "pong", "http", "http-static", "https", "ws"):
            if servers.supports(s, m):
                try:
                    servers.check(layout, s, m)
                    modes.append(m)
                except servers.Unavailable as e:
                    modes.append(f"{m}: {e}")
        log(f"  {s:18} " + "; ".join(modes))
    log("\nscenarios:")
    for p in plan:
        log(f"  {p['scenario']}: `{p['client_cmd']}` against {', '.join(p['subjects']) or 'nothing'}")
        for c in p["cells"]:
            log(f"    {c['label']}" + (f"  -> {c['reason']}" if c["reason"] else ""))
        for lab in p.get("file_cells", []) + p.get("spawn_cells", []) + p.get("hiredis_cells", []):
            log(f"    {lab}")
    if skipped:
        log("\nnot run:")
        for s in skipped:
            log(f"  {s['scenario']} {s.get('cell') or s.get('subject') or ''}: {s['reason']}")
    log(f"\nestimated time: {estimate(plan, a.repeats, True) / 60:.1f} min (with syscall runs)")


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.dirname(bench_dir)
    layout = servers.Layout(root, a.build_dir)
    if a.report_from:
        with open(os.path.join(a.report_from, "results.json")) as f:
            res = json.load(f)
        if not a.no_plots:
            res["venv_python"], res["venv_note"] = venv.ensure(bench_dir, log)
        finish(res, a.report_from, bench_dir, not a.no_plots)
        log(f"rewrote {os.path.join(a.report_from, 'report.md')}")
        return 0
    procs.install_cleanup()
    for left in procs.reap_leftovers():
        log(f"killed a leftover of an earlier, killed run: {left}")
    nofile = procs.raise_fd_limit()
    usable = sorted(os.sched_getaffinity(0))
    server_cpus, client_cpus = procs.split_cpus(usable)
    ports = env.ephemeral_ports()
    if a.list:
        list_all(a, layout, len(usable), server_cpus, nofile, ports)
        return 0
    started = datetime.datetime.now()
    t0 = time.monotonic()
    outdir = a.out or os.path.join(bench_dir, "results", started.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(outdir, exist_ok=True)
    res = {"version": 1, "mode": "full" if a.full else "quick", "started": started.isoformat(timespec="seconds"),
           "command": " ".join(["bench/run"] + (sys.argv[1:] if argv is None else argv)),
           "repeats": a.repeats, "servers": a.servers, "scenarios": a.scenarios, "runs": [], "notes": []}
    if a.scenario_rounds:
        res["scenario_rounds"] = a.scenario_rounds
    if a.scenario_servers:
        res["scenario_servers"] = a.scenario_servers
    if not a.no_plots:
        res["venv_python"], res["venv_note"] = venv.ensure(bench_dir, log)
        if not res["venv_python"]:
            log(f"plots will be skipped: {res['venv_note']}")
    perf_ok, perf_note = (False, "disabled with --no-syscalls") if a.no_syscalls else measure.probe_perf()
    res["syscalls_measured"] = perf_ok
    res["environment"] = env.collect(root, a.build_dir, usable, server_cpus, client_cpus, nofile, perf_note)
    os.sched_setaffinity(0, client_cpus)  # the runner itself stays off the server's CPUs
    plan, skipped = make_plan(a, layout, len(usable), server_cpus, nofile, ports)
    res["plan"], res["skipped"] = plan, skipped
    if len(usable) < 2:
        res["notes"].append("Only one CPU: server and client share it.")
    log(f"results: {outdir}\n{perf_note}\nestimated time: {estimate(plan, a.repeats, perf_ok) / 60:.1f} min")
    for s in skipped:
        log(f"  not run: {s['scenario']} {s.get('cell') or s.get('subject') or ''}: {s['reason']}")
    ctx = execute.Context(layout, server_cpus, client_cpus, perf=perf_ok)
    status = 0
    try:
        if any(p["scenario"] == "http-static" and p["subjects"] and any(c["status"] == "run" for c in p["cells"])
               for p in plan):
            ctx.static_root = execute.make_static_root()
        if any(scenarios.SCENARIOS[p["scenario"]].mode == "https" and p["subjects"] for p in plan
               if p["scenario"] in scenarios.SCENARIOS):
            ctx.tls_files = execute.make_tls_files()
        if scenarios.SWITCH in a.scenarios and not switch.available(layout):
            log("switch: running switch_bench")
            res["switch"] = switch.run(layout, a.full, a.repeats, switch.cpus_for(server_cpus))
            log(f"switch: {res['switch'].get('error') or res['switch']['subjects'].keys()}")
        if scenarios.FILEIO in a.scenarios and not fileio.available(layout):
            log("fileio: file_bench and fio, alternating")
            res["fileio"] = fileio.run(layout, a.full, a.repeats, switch.cpus_for(server_cpus), a.seconds,
                                       a.where_filter, a.fileio_backends)
            log(f"fileio: {res['fileio'].get('error') or [c['label'] for c in res['fileio']['cells']]}")
        if scenarios.SPAWN in a.scenarios and not spawn.available(layout):
            log("spawn: spawn_bench and tokio_spawn_bench, alternating")
            res["spawn"] = spawn.run(layout, a.full, a.repeats, switch.cpus_for(server_cpus), a.where_filter,
                                     a.fileio_backends[0])
            log(f"spawn: {res['spawn'].get('error') or [c['label'] for c in res['spawn']['cells']]}")
        if scenarios.HIREDIS in a.scenarios and not hiredis.available(layout):
            log("hiredis: hooked fibers, async API, thread per client, alternating")
            res["hiredis"] = hiredis.run(layout, a.full, a.repeats, server_cpus, client_cpus, nofile, a.seconds,
                                         a.where_filter, log)
        run_plan(a, ctx, plan, res["runs"], skipped)
    except (KeyboardInterrupt, SystemExit) as e:
        res["notes"].append("Interrupted: this report covers only the runs before the interruption.")
        status = e.code if isinstance(e, SystemExit) and isinstance(e.code, int) else 130
    finally:
        procs.kill_all()
        if ctx.static_root:
            shutil.rmtree(ctx.static_root, ignore_errors=True)
        if ctx.tls_files:
            shutil.rmtree(os.path.dirname(ctx.tls_files[0]), ignore_errors=True)
        res["backend_lines"] = {k: v for k, v in ctx.first_lines.items() if k.startswith("ringio")}
        res["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
        res["elapsed_s"] = round(time.monotonic() - t0, 1)
        finish(res, outdir, bench_dir, not a.no_plots)
    log(f"\n{report.table(['target', 'cell', 'measured', 'met?'], [[t['target'], t['cell'], t['measured'], report.met_text(t['met'])] for t in res['targets']])}")
    log(f"\nreport: {os.path.join(outdir, 'report.md')} ({res['elapsed_s'] / 60:.1f} min)")
    return status
