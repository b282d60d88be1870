# SPDX-License-Identifier: Apache-2.0
"""One run: start a server pinned to its CPUs, wait until it serves, load it
with a client on the other CPUs, measure both, stop the server."""
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from . import clients, measure, procs, scenarios, servers


@dataclass
class Context:
    layout: servers.Layout
    server_cpus: list
    client_cpus: list
    perf: bool = False
    ready_timeout: float = 10.0
    grace: float = 5.0
    cost_server: str = None  # the server of the client-cost scenario
    static_root: str = None  # the files of http-static (made once per run)
    tls_files: tuple = None  # (certificate, key) of the https scenarios (made once per run)
    first_lines: dict = field(default_factory=dict)  # server -> its start-up line


class RunFailed(Exception):
    pass


def make_tls_files():
    """A self-signed P-256 certificate for 127.0.0.1 and its key, in a
    temporary directory (removed by the caller): every https server gets the
    same pair.  None when the openssl program is missing."""
    import subprocess
    openssl = shutil.which("openssl")
    if not openssl:
        return None
    d = tempfile.mkdtemp(prefix=procs.tmp_prefix() + "tls-")
    os.chmod(d, 0o755)  # nginx's workers may run as another user
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    os.chmod(key, 0o644)
    return cert, key


def make_static_root():
    """A temporary directory with the files of http-static (removed by the
    caller, or with a killed runner's leftovers).  The bytes are real, written
    once per run, and so in the page cache for every server alike."""
    root = tempfile.mkdtemp(prefix=procs.tmp_prefix() + "static-")
    os.chmod(root, 0o755)  # nginx's workers run as an unprivileged user when the runner is root
    block = bytes(range(256)) * 4096  # 1 MiB
    for name, size in scenarios.STATIC_FILES.values():
        with open(os.path.join(root, name), "wb") as f:
            left = size
            while left > 0:
                f.write(block[:min(left, len(block))])
                left -= len(block)
        os.chmod(os.path.join(root, name), 0o644)
    return root


def _tail(text, n=600):
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def _wait_ready(ctx, child, spec, port):
    deadline = time.monotonic() + ctx.ready_timeout
    while True:
        if child.exited():
            child.reap()
            raise RunFailed(f"{spec.name} exited with status {child.status} before serving: "
                            f"{_tail(child.errors() or child.output(), 300)}")
        line_ok = not spec.ready_line or child.output().strip()
        kids_ok = not spec.children or len(measure.process_tree(child.pid)) > spec.children
        if line_ok and kids_ok and procs.port_accepts(port):
            return
        if time.monotonic() > deadline:
            raise RunFailed(f"{spec.name} did not accept connections on 127.0.0.1:{port} "
                            f"within {ctx.ready_timeout:.0f} s")
        time.sleep(0.01)


def run_one(ctx, scen, cell, subject, repeat, kind="measure"):
    """Runs one cell against one subject; returns the run record (a dict)."""
    server = ctx.cost_server if scen.subjects_are_clients else subject
    client = subject if scen.subjects_are_clients else scenarios.client_of(scen.name, cell)
    rec = {"scenario": scen.name, "cell": dict(cell), "cell_label": scenarios.label(scen.name, cell),
           "subject": subject, "server": server, "client": client, "repeat": repeat, "kind": kind,
           "ok": False, "error": None}
    tmp = tempfile.mkdtemp(prefix=procs.tmp_prefix())
    srv = cli = counter = spec = None
    begin = time.monotonic()
    try:
        port = procs.free_port()
        spec = servers.spec(ctx.layout, server, scen.mode, port, cell, tmp, ctx.static_root, ctx.tls_files)
        rec["server_cmd"] = spec.argv
        if spec.env:
            rec["server_env"] = dict(spec.env)
        rec["port"] = port
        srv = procs.Child(spec.argv, os.path.join(tmp, "server.out"), os.path.join(tmp, "server.err"),
                          cpus=ctx.server_cpus, cwd=tmp, env=dict(os.environ, **spec.env) if spec.env else None)
        try:
            _wait_ready(ctx, srv, spec, port)
        except RunFailed:
            rec["start_failed"] = True
            raise
        rec["ready_s"] = round(time.monotonic() - begin, 3)
        first = srv.output().strip().splitlines()
        rec["server_line"] = first[0] if first else None
        if first:
            ctx.first_lines.setdefault(server, first[0])
        pids = measure.process_tree(srv.pid)
        if kind == "syscalls":
            counter = measure.SyscallCounter(pids, cpus=ctx.client_cpus)
            if not counter.enable():
                rec["note"] = "perf did not start counting"
        argv = clients.command(ctx.layout, client, cell, port, server_pid=srv.pid)
        rec["client_cmd"] = argv
        u0, s0 = measure.cpu_times(pids)
        m0 = measure.machine_cpu()
        t0 = time.monotonic()
        cli = procs.Child(argv, os.path.join(tmp, "client.out"), os.path.join(tmp, "client.err"),
                          cpus=ctx.client_cpus, cwd=tmp)
        limit = scenarios.time_limit(scen.name, cell)
        if not cli.wait(limit):
            cli.kill()
            raise RunFailed(f"{client} still running after {limit:.0f} s; killed")
        t1 = time.monotonic()
        u1, s1 = measure.cpu_times(pids)
        m1 = measure.machine_cpu()
        if counter:
            rec["syscalls"] = counter.stop()
            counter = None
        cli.reap()
        rec["wall_s"] = round(t1 - t0, 4)
        rec["server_cpu"] = {"user_s": round(u1 - u0, 4), "sys_s": round(s1 - s0, 4)}
        cu, cs = measure.rusage_cpu(cli.rusage)
        rec["client_cpu"] = {"user_s": round(cu, 6), "sys_s": round(cs, 6)}
        # Everything else the machine did meanwhile: other users' work, perf, the runner.
        rec["machine"] = {"other_s": round(m1[0] - m0[0] - (u1 - u0) - (s1 - s0) - cu - cs, 3),
                          "steal_s": round(m1[1] - m0[1], 3)}
        rec["client_rc"] = cli.status
        out = cli.output()
        if srv.exited():
            raise RunFailed(f"{server} exited during the load: {_tail(srv.errors(), 300)}")
        try:
            m = clients.parse(client, out, cell.get("blocksize"))
        except clients.ParseError as e:
            raise RunFailed(f"{client} exited {cli.status}: {e}; stderr: {_tail(cli.errors(), 300)}") from None
        rec["metrics"] = m
        rec["per_op"] = per_op(rec)
        if cli.status != 0:
            rec["error"] = f"{client} exited with status {cli.status}: {_tail(cli.errors(), 300)}"
        else:
            rec["ok"] = True
    except (RunFailed, servers.Unavailable, OSError) as e:
        rec["error"] = str(e)
    finally:
        if counter:
            counter.close()
        if cli and cli.status is None:
            cli.kill()
        if srv:
            if spec is not None and spec.kill_only:
                srv.kill()
                rec["server_stop"] = "SIGKILL (ignores SIGTERM)"
            else:
                clean = srv.stop(ctx.grace)
                rec["server_stop"] = "SIGTERM" if clean else f"SIGKILL after {ctx.grace:.0f} s"
            if rec.get("ok") is False and not rec.get("server_stderr"):
                rec["server_stderr"] = _tail(srv.errors(), 600)
        shutil.rmtree(tmp, ignore_errors=True)
        rec["total_s"] = round(time.monotonic() - begin, 3)
    return rec


def per_op(rec):
    """CPU microseconds (server user/sys/total, client) and syscalls per op."""
    ops = rec.get("metrics", {}).get("ops") or 0
    out = {}
    if ops <= 0:
        return out
    sc, cc = rec.get("server_cpu"), rec.get("client_cpu")
    if sc:
        out["server_user_us"] = sc["user_s"] / ops * 1e6
        out["server_sys_us"] = sc["sys_s"] / ops * 1e6
        out["server_us"] = (sc["user_s"] + sc["sys_s"]) / ops * 1e6
    if cc and cc.get("user_s") is not None:
        out["client_us"] = (cc["user_s"] + cc["sys_s"]) / ops * 1e6
    if rec.get("syscalls") is not None:
        out["syscalls"] = rec["syscalls"] / ops
    return out
