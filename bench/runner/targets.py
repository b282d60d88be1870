# SPDX-License-Identifier: Apache-2.0
"""The ringio-uring targets of the issue, judged from the measured medians."""
from . import stats, verdict

ME = "ringio-uring"


def _why_missing(skipped, scenario, subjects, selected=None, servers=None):
    """Why a comparison has no data: the scenario or a server was not
    selected, the client is missing, or one of the servers was skipped.
    servers: the selected ones, or {scenario: servers} in the quick default."""
    quick = isinstance(servers, dict)  # the quick default: servers per scenario
    if selected is not None and scenario not in selected:
        return f"{scenario} not selected (quick default; --scenarios or --full)" if quick else \
            f"{scenario} not selected (--scenarios)"
    chosen = servers.get(scenario, ()) if quick else servers
    for s in subjects:
        if chosen is not None and s not in chosen:
            return f"{s} not run in {scenario} (quick default; --servers or --full)" if quick else \
                f"{s} not selected (--servers)"
    mine = [s for s in skipped if s["scenario"] == scenario and not s.get("cell")]
    for s in mine:
        if not s.get("subject"):
            return s["reason"]
    for s in mine:
        if s.get("subject") in subjects:
            return f"{s['subject']} {s['reason']}"
    return "no successful runs"


def _cells(summary, scenario, pred):
    seen = []
    for g in summary:
        if g["scenario"] == scenario and g["cell_label"] not in [c[0] for c in seen] and pred(g["cell"]):
            seen.append((g["cell_label"], g["cell"]))
    return seen


def _compare(summary, miss, scenario, label, other, key, limit, higher_is_better, what):
    mine = stats.find(summary, scenario, label, ME)
    theirs = stats.find(summary, scenario, label, other)
    m = mine.get(key) if mine else None
    t = theirs.get(key) if theirs else None
    sign = ">=" if higher_is_better else "<="
    row = {"target": f"{scenario}: {what} {sign} {limit:.2f}x {other}", "cell": label}
    if not m or not t:
        row.update(measured="not measured: " + miss(scenario, [ME, other]), met=None)
        return row
    return _judged(row, mine, theirs, key, limit, higher_is_better)


def _judged(row, mine, theirs, key, limit, higher_is_better):
    """The row's verdict from the per-round ratios of two summaries' `key`
    (verdict.py); summaries without rounds fall back to the ratio of medians."""
    ratios = verdict.paired_ratios(mine.get("rounds", {}).get(key), theirs.get("rounds", {}).get(key))
    if not ratios and theirs[key]["median"]:
        ratios = [mine[key]["median"] / theirs[key]["median"]]
    j = verdict.judge(ratios, limit, higher_is_better)
    if j is None:
        row.update(measured="not measured: zero baseline", met=None)
        return row
    row.update(measured=verdict.measured_text(j, limit), ratio=j["ratio"], spread=[j["low"], j["high"]],
               rounds=j["n"], met=j["met"])
    return row


def evaluate(summary, skipped, full, selected=None, servers=None):
    """One row per target and grid cell: target, cell, measured, met (True,
    False, or None when it could not be judged)."""
    rows = []
    miss = lambda scen, subjects: _why_missing(skipped, scen, subjects, selected, servers)  # noqa: E731
    one_thread = lambda c: int(c.get("threads", 1)) == 1  # noqa: E731
    for scen in ("echo", "pingpong"):
        cells = _cells(summary, scen, one_thread)
        if not cells:
            rows.append({"target": f"{scen} at 1 thread: throughput >= 0.95x and server CPU per round trip "
                                   f"<= 1.05x raw-uring", "cell": "-",
                         "measured": "not measured: " + miss(scen, [ME, "raw-uring"]), "met": None})
        for label, _ in cells:
            rows.append(_compare(summary, miss, scen, label, "raw-uring", "throughput", 0.95, True, "throughput"))
            rows.append(_compare(summary, miss, scen, label, "raw-uring", "server_us", 1.05, False,
                                 "server CPU per round trip"))
    many = _cells(summary, "echo", lambda c: int(c.get("connections", 0)) >= 50)
    for other in ("asio-epoll", "tokio-mt", "tokio-percore"):
        if not many:
            rows.append({"target": f"echo, 50+ connections: server CPU per round trip <= 0.85x {other}", "cell": "-",
                         "measured": "not measured: " + miss("echo", [ME, other]), "met": None})
        for label, _ in many:
            rows.append(_compare(summary, miss, "echo", label, other, "server_us", 0.85, False,
                                 "server CPU per round trip"))
    row = {"target": "churn at concurrency 10000: zero failed sessions", "cell": "concurrency=10000"}
    g = stats.find(summary, "churn", "concurrency=10000", ME)
    if not full:
        row.update(measured="not measured: full grid only (--full)", met=None)
    elif not g or not g["runs_ok"]:
        row.update(measured="not measured: " + miss("churn", [ME]), met=None)
    else:
        failed_runs = len(g["failed"])
        row.update(measured=f"{g['errors']} failed sessions in {g['runs_ok']} runs"
                            + (f", {failed_runs} runs failed" if failed_runs else ""),
                   met=g["errors"] == 0 and failed_runs == 0)
    rows.append(row)
    rows += _http_targets(summary, miss)
    rows += _scaling_targets(summary, miss, full)
    rows += _fast_path_targets(summary, miss)
    rows += _websocket_targets(summary, miss)
    rows += _h2o_targets(summary, miss)
    rows += _hooks_targets(summary, skipped, selected)
    return rows


HOOKED, FIBERS = "ringio-uring-hooked", "ringio-uring-fibers"
HOOKS_LIMIT = 0.90


def _hooks_targets(summary, skipped, selected=None):
    """churn: plain blocking code on hooked fibers >= 0.9x the sessions per second of
    ringio's fiber server (a fiber per connection awaiting ringio's own operations)."""
    what = f"churn: sessions/s of {HOOKED} (blocking POSIX code, hooks) >= {HOOKS_LIMIT:.2f}x {FIBERS}"
    cells = _cells(summary, "churn", one_thread)
    rows = []
    for label, _ in cells:
        rows.append(_hooks_row(summary, skipped, label, what))
    if not cells:
        why = "churn not selected (--scenarios)" if selected is not None and "churn" not in selected else \
            _hooks_missing(skipped)
        rows.append({"target": what, "cell": "-", "measured": "not measured: " + why, "met": None})
    return rows


def _hooks_missing(skipped):
    for s in skipped:
        if s["scenario"] == "churn" and not s.get("cell") and s.get("subject") in (HOOKED, FIBERS, None):
            return f"{s.get('subject') or 'churn'} {s['reason']}".strip()
    return "no successful runs"


def _hooks_row(summary, skipped, label, what):
    row = {"target": what, "cell": label}
    mine = stats.find(summary, "churn", label, HOOKED)
    theirs = stats.find(summary, "churn", label, FIBERS)
    m = (mine or {}).get("throughput")
    t = (theirs or {}).get("throughput")
    if not m or not t or not t["median"]:
        why = _hooks_missing(skipped)
        if why == "no successful runs" and (not mine or not theirs):
            why = f"{HOOKED} and {FIBERS} not both run (they run by default, or name them in --servers)"
        row.update(measured="not measured: " + why, met=None)
        return row
    return _judged(row, mine, theirs, "throughput", HOOKS_LIMIT, True)


WS_PEERS = ("tokio-percore", "beast")
WS_LIMIT = 1.10


def _h2o_targets(summary, miss):
    """h2o: >= 1.25x its requests per server CPU second on hello keep-alive at 100
    and 1,000 connections (CPU per request <= 0.80x); level or better on static
    files and HTTPS (CPU per request <= 1.00x, throughput >= 1.00x)."""
    rows = []
    checks = [("http-wrk", lambda c: one_thread(c) and int(c.get("connections", 0)) in (100, 1000), 0.80),
              ("http-static", lambda c: True, 1.00), ("https-wrk", one_thread, 1.00)]
    for scen, pred, cpu_limit in checks:
        if not stats_has(summary, scen, "h2o"):
            rows.append({"target": f"{scen}: server CPU per request <= {cpu_limit:.2f}x h2o", "cell": "-",
                         "measured": "not measured: " + miss(scen, [ME, "h2o"]), "met": None})
            continue
        for label, _ in _cells(summary, scen, pred):
            rows.append(_compare(summary, miss, scen, label, "h2o", "server_us", cpu_limit, False,
                                 "server CPU per request"))
            if cpu_limit == 1.00:
                rows.append(_compare(summary, miss, scen, label, "h2o", "throughput", 1.00, True, "throughput"))
    return rows


def stats_has(summary, scenario, subject):
    return any(g["scenario"] == scenario and g["subject"] == subject for g in summary)


def _websocket_targets(summary, miss):
    """ws-echo: messages per server CPU second >= 1.10x the best peer's (the peer
    with the least server CPU per message), in every cell."""
    rows = []
    cells = _cells(summary, "ws-echo", one_thread)
    what = f"ws-echo: messages per server CPU second >= {WS_LIMIT:.2f}x the best of {', '.join(WS_PEERS)}"
    if not cells:
        rows.append({"target": what, "cell": "-", "measured": "not measured: " + miss("ws-echo", [ME, *WS_PEERS]),
                     "met": None})
    for label, _ in cells:
        rows.append(ws_row(summary, miss, label, what))
    return rows


def ws_row(summary, miss, label, what):
    """One cell of the websocket target: ringio's messages per CPU second over the
    best peer's (= the peer's CPU per message over ringio's)."""
    row = {"target": what, "cell": label}
    mine = stats.find(summary, "ws-echo", label, ME)
    m = (mine or {}).get("server_us")
    peers = {}
    for p in WS_PEERS:
        g = stats.find(summary, "ws-echo", label, p)
        if g and g.get("server_us") and g["server_us"]["median"]:
            peers[p] = g["server_us"]["median"]
    if not m or not m["median"] or not peers:
        row.update(measured="not measured: " + miss("ws-echo", [ME, *WS_PEERS]), met=None)
        return row
    best = min(peers, key=peers.get)
    theirs = stats.find(summary, "ws-echo", label, best)
    ratios = verdict.paired_ratios(mine.get("rounds", {}).get("server_us"),
                                   theirs.get("rounds", {}).get("server_us"), invert=True)
    j = verdict.judge(ratios or [peers[best] / m["median"]], WS_LIMIT, True)
    row.update(measured=verdict.measured_text(j, WS_LIMIT, f" {best}"), ratio=j["ratio"],
               spread=[j["low"], j["high"]], rounds=j["n"], met=j["met"])
    return row


def _fast_path_targets(summary, miss):
    """Below the raw loop: server CPU per op <= 0.95x raw-uring at equal or better
    throughput in echo (50 and 1,000 connections) and ping/pong (100 and 1,000
    sessions); >= 1.1x the seed executor's pong on its own ping."""
    rows = []
    picks = (("echo", lambda c: one_thread(c) and int(c.get("connections", 0)) in (50, 1000)),
             ("pingpong", lambda c: one_thread(c) and int(c.get("sessions", 0)) in (100, 1000)))
    for scen, pred in picks:
        for label, _ in _cells(summary, scen, pred):
            row = _compare(summary, miss, scen, label, "raw-uring", "server_us", 0.95, False,
                           "server CPU per op")
            row["target"] = "fast path: " + row["target"]
            rows.append(row)
    cells = _cells(summary, "pingpong-seed", lambda c: True)
    if not cells:
        rows.append({"target": "fast path: pingpong-seed: throughput >= 1.10x uring-exec", "cell": "-",
                     "measured": "not measured: " + miss("pingpong-seed", [ME, "uring-exec"]), "met": None})
    for label, _ in cells:
        row = _compare(summary, miss, "pingpong-seed", label, "uring-exec", "throughput", 1.10, True, "throughput")
        row["target"] = "fast path: " + row["target"]
        rows.append(row)
    return rows


def one_thread(cell):
    return int(cell.get("threads", 1)) == 1


def _http_targets(summary, miss):
    """HTTP: parity with the raw liburing loop, cheaper than tokio and nginx, and a
    p99 no worse than tokio's at 1,000 connections."""
    rows = []
    for scen in ("http-wrk", "http-ab"):
        cells = _cells(summary, scen, lambda c: int(c.get("threads", 1)) == 1)
        if not cells:
            rows.append({"target": f"{scen}: throughput >= 0.95x, CPU per request <= 1.10x raw-uring; "
                                   f"CPU <= 0.80x tokio and nginx", "cell": "-",
                         "measured": "not measured: " + miss(scen, [ME, "raw-uring"]), "met": None})
        for label, _ in cells:
            rows.append(_compare(summary, miss, scen, label, "raw-uring", "throughput", 0.95, True, "throughput"))
            rows.append(_compare(summary, miss, scen, label, "raw-uring", "server_us", 1.10, False,
                                 "server CPU per request"))
            for other in ("tokio-mt", "tokio-percore", "nginx"):
                rows.append(_compare(summary, miss, scen, label, other, "server_us", 0.80, False,
                                     "server CPU per request"))
    for other in ("tokio-mt", "tokio-percore"):
        row = {"target": f"http-wrk: p99 latency <= {other}'s", "cell": "connections=1000"}
        mine = stats.find(summary, "http-wrk", "connections=1000", ME)
        theirs = stats.find(summary, "http-wrk", "connections=1000", other)
        m = (mine or {}).get("latency_us", {}).get("p99")
        t = (theirs or {}).get("latency_us", {}).get("p99")
        if m is None or t is None:
            ran = _cells(summary, "http-wrk", lambda c: True)
            why = miss("http-wrk", [ME, other]) if not ran or mine else "full grid only (--full)"
            if ran and not mine and any(c[1].get("connections") == 1000 for c in ran):
                why = miss("http-wrk", [ME, other])
            row.update(measured="not measured: " + why, met=None)
        else:
            row.update(measured=f"{m:.0f} us vs {t:.0f} us ({m / t:.2f}x)", ratio=m / t, met=m <= t)
        rows.append(row)
    return rows


def _scaling_targets(summary, miss, full):
    """Threads: 8 threads >= 6x one thread at 1,000+ sessions; ahead of Asio (both
    backends) in every ping-pong cell with 100+ sessions."""
    rows = []
    cells = _cells(summary, "pingpong", lambda c: int(c.get("sessions", 0)) >= 1000 and int(c.get("threads", 1)) == 1)
    for label, cell in cells:
        row = {"target": "threads: ping-pong with 8 threads >= 6x 1 thread", "cell": f"sessions={cell['sessions']}"}
        one = stats.find(summary, "pingpong", label, ME)
        eight_label = label.replace("threads=1", "threads=8")
        eight = stats.find(summary, "pingpong", eight_label, ME)
        if not one or not eight or not one.get("throughput") or not eight.get("throughput"):
            row.update(measured="not measured: no 8-thread run (needs 8+ cores; see the grid's marks)", met=None)
        else:
            r = eight["throughput"]["median"] / one["throughput"]["median"]
            row.update(measured=f"{r:.2f}x", ratio=r, met=r >= 6)
        rows.append(row)
    if not cells:
        rows.append({"target": "threads: ping-pong with 8 threads >= 6x 1 thread", "cell": "-",
                     "measured": "not measured: " + ("no 1,000+ session cells" if full else "full grid only (--full)"),
                     "met": None})
    big = _cells(summary, "pingpong", lambda c: int(c.get("sessions", 0)) >= 100)
    for other in ("asio-uring", "asio-epoll"):
        for label, _ in big:
            row = _compare(summary, miss, "pingpong", label, other, "throughput", 1.0, True, "throughput")
            row["target"] = "threads: " + row["target"]
            rows.append(row)
    return rows
