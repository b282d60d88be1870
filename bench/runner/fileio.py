# SPDX-License-Identifier: Apache-2.0
"""The fileio scenario: random 4 KiB reads of one file on one thread at queue
depth 1, 32 and 128, O_DIRECT and buffered, from apps/file_bench (ringio on
io_uring) and from `fio --ioengine=io_uring` with the same parameters.  The two
alternate, run by run; each run's CPU time (user + system, from wait4) is
divided by the reads it made.  No server: both run pinned to the server CPUs."""
import json
import os
import shutil
import subprocess
import tempfile

SUBJECTS = ["ringio", "fio"]
BLOCK = 4096
DEPTHS = [1, 32, 128]
QUICK_FILE = 256 << 20
FULL_FILE = 1 << 30


def cells(full, seconds=None):
    """One cell per (direct, depth)."""
    d = seconds or (5 if full else 1)
    return [{"direct": direct, "depth": depth, "seconds": d} for direct in (1, 0) for depth in DEPTHS]


def label(cell):
    return f"{'direct' if cell['direct'] else 'buffered'} qd{cell['depth']}"


def file_dir():
    """Where the test file goes: RINGIO_FILEIO_DIR, else /var/tmp (a disk, where /tmp may be tmpfs)."""
    return os.environ.get("RINGIO_FILEIO_DIR") or ("/var/tmp" if os.path.isdir("/var/tmp") else "/tmp")


def ringio_command(layout, path, cell):
    argv = [layout.app("file_bench"), "--file", path, "--depth", str(cell["depth"]), "--block", str(BLOCK),
            "--seconds", str(cell["seconds"]), "--backend", "uring"]
    return argv + (["--direct"] if cell["direct"] else [])


def fio_command(path, cell):
    # --invalidate=0: fio would otherwise drop the file's page cache before each run, so
    # its buffered runs (and the ringio run after one) would read the disk.
    return ["fio", "--name=randread", f"--filename={path}", "--ioengine=io_uring", "--rw=randread",
            f"--bs={BLOCK}", f"--iodepth={cell['depth']}", f"--direct={cell['direct']}",
            f"--runtime={cell['seconds']}", "--time_based", "--numjobs=1", "--thread=0", "--norandommap",
            "--randrepeat=0", "--invalidate=0", "--output-format=json"]


def available(layout):
    """None when both load generators are present, else why not."""
    p = layout.app("file_bench")
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        return f"{os.path.relpath(p, layout.root)} not built"
    if shutil.which("fio") is None:
        return "fio is not installed (scripts/install-deps.sh bench)"
    return None


def parse_ringio(stdout):
    """(reads, seconds) from file_bench's RESULT line, or None."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            return r["reads"], r["seconds"]
    return None


def parse_fio(stdout):
    """(reads, seconds) from fio's JSON, or None.  fio may print notes before the JSON."""
    start = stdout.find("{")
    if start < 0:
        return None
    job = json.loads(stdout[start:])["jobs"][0]
    return job["read"]["total_ios"], job["job_runtime"] / 1000.0


def timed(argv, cpus):
    """Runs argv pinned to cpus; returns (rc, stdout, stderr, cpu seconds of the child)."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, text=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read(), usage.ru_utime + usage.ru_stime


def make_file(size):
    """A file of `size` random bytes (real blocks: a hole would be read as zeros without I/O)."""
    fd, path = tempfile.mkstemp(prefix="ringio-fileio-", suffix=".bin", dir=file_dir())
    chunk = os.urandom(1 << 20)
    with os.fdopen(fd, "wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    return path


def warm(path):
    """Reads the whole file once, buffered, so that it sits in the page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def summarize(samples):
    """{iops: {median, min, max}, cpu_us_per_io: {...}} of one subject's runs in one cell."""
    out = {}
    for key in ("iops", "cpu_us_per_io"):
        xs = [s[key] for s in samples if s.get(key) is not None]
        out[key] = {"median": _median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None
    return out


def one_run(layout, subject, path, cell, cpus):
    argv = ringio_command(layout, path, cell) if subject == "ringio" else fio_command(path, cell)
    rc, out, err, cpu = timed(argv, cpus)
    parsed = (parse_ringio if subject == "ringio" else parse_fio)(out) if rc == 0 else None
    if not parsed or parsed[0] == 0:
        return {"error": f"{os.path.basename(argv[0])} exited {rc}: {err.strip()[-300:]}"}
    reads, secs = parsed
    return {"reads": reads, "seconds": secs, "iops": reads / secs, "cpu_s": cpu, "cpu_us_per_io": cpu * 1e6 / reads}


def run(layout, full, repeats, cpus, seconds=None, where=None):
    """Runs every cell, the subjects alternating (ringio first on even repeats,
    fio first on odd ones); returns the record kept in results.json."""
    why = available(layout)
    rec = {"cells": [], "error": why, "file_dir": file_dir(), "block": BLOCK}
    if why:
        return rec
    size = FULL_FILE if full else QUICK_FILE
    path = make_file(size)
    rec["file_bytes"] = size
    try:
        warm(path)  # the buffered cells read the page cache, whatever ran before
        for cell in cells(full, seconds):
            if where and any(k in cell and str(cell[k]) not in vs for k, vs in where.items()):
                continue
            runs = {s: [] for s in SUBJECTS}
            for r in range(repeats):
                order = SUBJECTS if r % 2 == 0 else list(reversed(SUBJECTS))
                for s in order:
                    runs[s].append(one_run(layout, s, path, cell, cpus))
            rec["cells"].append({"cell": cell, "label": label(cell), "runs": runs,
                                 "summary": {s: summarize([x for x in runs[s] if "error" not in x]) for s in SUBJECTS},
                                 "errors": [x["error"] for s in SUBJECTS for x in runs[s] if "error" in x]})
    finally:
        os.unlink(path)
    rec["commands"] = {"ringio": " ".join(["file_bench"] + ringio_command(layout, "FILE", cells(full, seconds)[1])[1:]),
                       "fio": " ".join(fio_command("FILE", cells(full, seconds)[1]))}
    return rec


def _fmt(v, digits):
    if not v:
        return "-"
    return f"{v['median']:.{digits}f} ({v['min']:.{digits}f}\u2013{v['max']:.{digits}f})"


def section(rec):
    """The report's section (markdown)."""
    out = ["### fileio", "",
           "Random 4 KiB reads of one file on one thread, queue depth 1, 32 and 128, O_DIRECT and buffered (the "
           "buffered file fits in the page cache): apps/file_bench (ringio, io_uring backend) and fio with "
           "`--ioengine=io_uring`, alternating run by run. CPU per read is the process's user + system time "
           "(wait4) over its reads. Median of the runs (min\u2013max)."]
    if rec.get("error"):
        return "\n".join(out + ["", f"Not run: {rec['error']}."])
    if rec.get("commands"):
        out += ["", f"Commands (qd32, O_DIRECT): `{rec['commands']['ringio']}` and `{rec['commands']['fio']}`; "
                f"the file: {rec.get('file_bytes', 0) >> 20} MiB in {rec['file_dir']}."]
    rows = ["| cell | ringio IOPS | fio IOPS | ringio CPU \u00b5s/read | fio CPU \u00b5s/read |",
            "|---|---|---|---|---|"]
    for c in rec["cells"]:
        sm = c["summary"]
        rows.append(f"| {c['label']} | {_fmt(sm['ringio']['iops'], 0)} | {_fmt(sm['fio']['iops'], 0)} | "
                    f"{_fmt(sm['ringio']['cpu_us_per_io'], 2)} | {_fmt(sm['fio']['cpu_us_per_io'], 2)} |")
    errs = [e for c in rec["cells"] for e in c["errors"]]
    if errs:
        rows += ["", f"Failed runs: {len(errs)} (first: {errs[0]})."]
    return "\n".join(out + [""] + rows)
