# SPDX-License-Identifier: Apache-2.0
"""The fileio scenario: block I/O on one file, one thread (one job), on tmpfs and on
the machine's disk (a file under the build directory), O_DIRECT and buffered:
4 KiB random reads at queue depth 1, 32 and 128, 4 KiB random writes, and 1 MiB
sequential writes with an fsync after every 16.  The subjects:

- fio-uring, fio-psync: `fio --ioengine=io_uring` and `--ioengine=psync` (psync is
  synchronous: only in the cells at queue depth 1);
- ringio-<backend> and ringio-uring-fixed: apps/file_bench, the latter with
  registered buffers (READ_FIXED / WRITE_FIXED; io_uring backend only);
- tokio: bench/peers/tokio's tokio_file_bench, a task per queue slot, each
  spawn_blocking(pread/pwrite); tokio-fs: the same with tokio::fs::File
  (seek + read_exact/write_all; buffered cells only: its own buffer is not aligned).

Subjects alternate run by run (the order rotates each round); each run's CPU time
(user + system of the process and its threads, from wait4) is divided by the
operations it made.  No server: every subject runs pinned to the server CPUs."""
import json
import mmap
import os
import shutil
import subprocess
import tempfile

BLOCK = 4096
SEQ_BLOCK = 1 << 20
FSYNC_EVERY = 16
DEPTHS = [1, 32, 128]
QUICK_FILE = 64 << 20
FULL_FILE = 1 << 30
QUICK_SECONDS = 0.5
FULL_SECONDS = 5
FILESYSTEMS = ["tmpfs", "disk"]
BASELINE = "fio-uring"
FIO = ["fio-uring", "fio-psync"]
TOKIO = ["tokio", "tokio-fs"]
TOKIO_DIR = "bench/peers/tokio/target/release"
BACKENDS = ["uring", "epoll", "uring-poll"]


def cells(full, seconds=None):
    """The grid: per filesystem and O_DIRECT/buffered, random reads at each depth,
    random writes (depth 32 in quick, every depth in full) and 1 MiB sequential writes
    with an fsync every FSYNC_EVERY."""
    d = seconds or (FULL_SECONDS if full else QUICK_SECONDS)
    out = []
    for fs in FILESYSTEMS:
        for direct in (1, 0):
            base = {"fs": fs, "direct": direct, "seconds": d}
            out += [dict(base, rw="randread", depth=q, block=BLOCK, fsync=0) for q in DEPTHS]
            out += [dict(base, rw="randwrite", depth=q, block=BLOCK, fsync=0) for q in (DEPTHS if full else [32])]
            out.append(dict(base, rw="write", depth=1, block=SEQ_BLOCK, fsync=FSYNC_EVERY))
    return out


def label(cell):
    fs = f"{cell['fs']} " if "fs" in cell else ""
    kind = {"randread": "randread 4k", "randwrite": "randwrite 4k"}.get(cell.get("rw", "randread"))
    if kind is None:
        kind = f"write {cell['block'] >> 20}M fsync/{cell['fsync']}"
    return f"{fs}{'direct' if cell['direct'] else 'buffered'} {kind} qd{cell['depth']}"


def subjects(backends):
    """Every subject, in the order they are reported: the baseline first."""
    out = list(FIO)
    for b in backends:
        out.append(f"ringio-{b}")
        if b == "uring":
            out.append("ringio-uring-fixed")
    return out + TOKIO


def applies(subject, cell):
    """None when `subject` runs in `cell`, else why not."""
    if subject == "fio-psync" and cell["depth"] != 1:
        return "psync is synchronous (queue depth 1 only)"
    if subject == "tokio-fs" and cell["direct"]:
        return "tokio::fs::File reads and writes through its own unaligned buffer: no O_DIRECT"
    return None


def round_seconds(cells_, subs):
    """About how long one round of cells_ takes: each run's length plus fio's or the
    program's start-up (about 0.3 s), for every subject that runs in the cell."""
    return sum((c["seconds"] + 0.3) * sum(1 for s in subs if not applies(s, c)) for c in cells_)


def tmpfs_dir(mounts_text=None):
    """A writable tmpfs directory (/dev/shm first), or None."""
    if mounts_text is None:
        try:
            with open("/proc/self/mounts") as f:
                mounts_text = f.read()
        except OSError:
            return None
    found = [m[1] for m in (line.split() for line in mounts_text.splitlines()) if len(m) > 2 and m[2] == "tmpfs"]
    for d in sorted(found, key=lambda p: (p != "/dev/shm", p != "/tmp", p)):
        if os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return d
    return None


def disk_dir(layout):
    """The disk file's directory: RINGIO_FILEIO_DIR, else <build dir>/fileio."""
    return os.environ.get("RINGIO_FILEIO_DIR") or os.path.join(layout.root, layout.build, "fileio")


def fs_type(path, mounts_text=None):
    """The type of the filesystem that holds path (longest mount point prefix)."""
    if mounts_text is None:
        with open("/proc/self/mounts") as f:
            mounts_text = f.read()
    path = os.path.realpath(path)
    best, kind = "", "?"
    for m in (line.split() for line in mounts_text.splitlines()):
        if len(m) > 2 and (path == m[1] or path.startswith(m[1].rstrip("/") + "/")) and len(m[1]) >= len(best):
            best, kind = m[1], m[2]
    return kind


def direct_support(path):
    """None when `path` can be opened with O_DIRECT and read 4 KiB at offset 0 into an
    aligned buffer, else why not (the errno's text)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:
        return f"open with O_DIRECT: {e.strerror}"
    try:
        buf = mmap.mmap(-1, BLOCK)
        os.preadv(fd, [buf], 0)
        return None
    except OSError as e:
        return f"O_DIRECT read: {e.strerror}"
    finally:
        os.close(fd)


def tokio_binary(layout):
    return os.path.join(layout.root, TOKIO_DIR, "tokio_file_bench")


def ringio_command(layout, path, cell, backend="uring", fixed=False):
    argv = [layout.app("file_bench"), "--file", path, "--rw", cell.get("rw", "randread"), "--depth",
            str(cell["depth"]), "--block", str(cell.get("block", BLOCK)), "--seconds", str(cell["seconds"]),
            "--backend", backend]
    if cell.get("fsync"):
        argv += ["--fsync", str(cell["fsync"])]
    return argv + (["--direct"] if cell["direct"] else []) + (["--fixed"] if fixed else [])


def fio_command(path, cell, engine="io_uring"):
    # --invalidate=0: fio would otherwise drop the file's page cache before each run, so
    # its buffered runs (and the next subject's) would read the disk.
    depth = cell["depth"] if engine == "io_uring" else 1
    argv = ["fio", "--name=job", f"--filename={path}", f"--ioengine={engine}", f"--rw={cell.get('rw', 'randread')}",
            f"--bs={cell.get('block', BLOCK)}", f"--iodepth={depth}", f"--direct={cell['direct']}",
            f"--runtime={int(round(cell['seconds'] * 1000))}ms", "--time_based", "--numjobs=1", "--thread=0",
            "--norandommap", "--randrepeat=0", "--invalidate=0", "--output-format=json"]
    return argv + ([f"--fsync={cell['fsync']}"] if cell.get("fsync") else [])


def tokio_command(layout, path, cell, api="blocking"):
    argv = [tokio_binary(layout), "--file", path, "--rw", cell.get("rw", "randread"), "--depth", str(cell["depth"]),
            "--block", str(cell.get("block", BLOCK)), "--seconds", str(cell["seconds"]), "--api", api]
    if cell.get("fsync"):
        argv += ["--fsync", str(cell["fsync"])]
    return argv + (["--direct"] if cell["direct"] else [])


def command(layout, subject, path, cell):
    if subject == "fio-uring":
        return fio_command(path, cell, "io_uring")
    if subject == "fio-psync":
        return fio_command(path, cell, "psync")
    if subject == "tokio":
        return tokio_command(layout, path, cell, "blocking")
    if subject == "tokio-fs":
        return tokio_command(layout, path, cell, "fs")
    backend = subject[len("ringio-"):]
    fixed = backend.endswith("-fixed")
    return ringio_command(layout, path, cell, backend[:-len("-fixed")] if fixed else backend, fixed)


def available(layout):
    """None when ringio's and fio's load generators are present, else why not."""
    p = layout.app("file_bench")
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        return f"{os.path.relpath(p, layout.root)} not built"
    if shutil.which("fio") is None:
        return "fio is not installed (scripts/install-deps.sh bench)"
    return None


def subject_missing(layout, subject):
    """None when the subject's program is there, else why not (tokio is optional)."""
    if subject in TOKIO:
        p = tokio_binary(layout)
        if not (os.path.isfile(p) and os.access(p, os.X_OK)):
            return f"{os.path.relpath(p, layout.root)} not built (make build-bench)"
    return None


def parse_ringio(stdout):
    """(operations, seconds) from file_bench's or tokio_file_bench's RESULT line, or None."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            return r.get("ops", r.get("reads")), r["seconds"]
    return None


def parse_fio(stdout):
    """(operations, seconds) from fio's JSON, or None.  fio may print notes before the
    JSON.  Operations are reads plus writes (fsyncs are not counted)."""
    start = stdout.find("{")
    if start < 0:
        return None
    job = json.loads(stdout[start:])["jobs"][0]
    ops = job.get("read", {}).get("total_ios", 0) + job.get("write", {}).get("total_ios", 0)
    return ops, job["job_runtime"] / 1000.0


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


def make_file(size, directory):
    """A file of `size` random bytes (real blocks: a hole would be read as zeros without I/O)."""
    os.makedirs(directory, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="ringio-fileio-", suffix=".bin", dir=directory)
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


KEYS = ("iops", "mb_s", "cpu_us_per_io")


def summarize(samples):
    """{iops|mb_s|cpu_us_per_io: {median, min, max, n}} of one subject's runs in one cell."""
    out = {}
    for key in KEYS:
        xs = [s[key] for s in samples if s.get(key) is not None]
        out[key] = {"median": _median(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None
    return out


def ratios(summary, baseline=BASELINE):
    """Per subject, its IOPS and CPU per operation over the baseline's (medians), or None."""
    base = summary.get(baseline) or {}
    out = {}
    for s, sm in summary.items():
        r = {}
        for key in ("iops", "cpu_us_per_io"):
            b = (base.get(key) or {}).get("median")
            v = ((sm or {}).get(key) or {}).get("median")
            r[key] = v / b if b and v is not None else None
        out[s] = r
    return out


def one_run(layout, subject, path, cell, cpus):
    argv = command(layout, subject, path, cell)
    rc, out, err, cpu = timed(argv, cpus)
    parsed = (parse_fio if subject in FIO else parse_ringio)(out) if rc == 0 else None
    if not parsed or not parsed[0]:
        return {"error": f"{os.path.basename(argv[0])} exited {rc}: {err.strip()[-300:]}"}
    ops, secs = parsed
    block = cell.get("block", BLOCK)
    return {"ops": ops, "seconds": secs, "iops": ops / secs, "mb_s": ops * block / secs / 1e6, "cpu_s": cpu,
            "cpu_us_per_io": cpu * 1e6 / ops}


def matches(cell, where):
    return not where or not any(k in cell and str(cell[k]) not in vs for k, vs in where.items())


def prepare(layout, full, where, cells_):
    """Per filesystem used by cells_: {dir, type, path, direct (None or why not)} or {error}."""
    size = FULL_FILE if full else QUICK_FILE
    out = {}
    for fs in sorted({c["fs"] for c in cells_}, key=FILESYSTEMS.index):
        d = tmpfs_dir() if fs == "tmpfs" else disk_dir(layout)
        if not d:
            out[fs] = {"error": "no writable tmpfs mount"}
            continue
        try:
            path = make_file(size, d)
        except OSError as e:
            out[fs] = {"error": f"cannot write {d}: {e.strerror}"}
            continue
        warm(path)  # the buffered cells read the page cache, whatever ran before
        out[fs] = {"dir": d, "type": fs_type(d), "path": path, "bytes": size, "direct": direct_support(path)}
    return out


def run(layout, full, repeats, cpus, seconds=None, where=None, backends=("uring",)):
    """Runs every cell, the subjects' order rotating each round; returns the record kept
    in results.json."""
    why = available(layout)
    subs = subjects(backends)
    rec = {"cells": [], "error": why, "block": BLOCK, "subjects": subs, "baseline": BASELINE,
           "missing": {s: m for s in subs if (m := subject_missing(layout, s))}}
    if why:
        return rec
    todo = [c for c in cells(full, seconds) if matches(c, where)]
    files = prepare(layout, full, where, todo)
    rec["files"] = {fs: {k: v for k, v in f.items() if k != "path"} for fs, f in files.items()}
    try:
        for cell in todo:
            f = files[cell["fs"]]
            entry = {"cell": cell, "label": label(cell), "runs": {}, "summary": {}, "errors": [], "not_run": {}}
            if f.get("error") or (cell["direct"] and f.get("direct")):
                entry["not_run"] = {"all": f.get("error") or f"O_DIRECT not supported on {f['type']}: {f['direct']}"}
                rec["cells"].append(entry)
                continue
            active = []
            for s in subs:
                reason = rec["missing"].get(s) or applies(s, cell)
                if reason:
                    entry["not_run"][s] = reason
                else:
                    active.append(s)
            runs = {s: [] for s in active}
            for r in range(repeats):
                k = r % len(active)
                for s in active[k:] + active[:k]:
                    runs[s].append(one_run(layout, s, f["path"], cell, cpus))
            entry["runs"] = runs
            entry["summary"] = {s: summarize([x for x in runs[s] if "error" not in x]) for s in active}
            entry["ratios"] = ratios(entry["summary"])
            entry["errors"] = [f"{s}: {x['error']}" for s in active for x in runs[s] if "error" in x]
            rec["cells"].append(entry)
    finally:
        for f in files.values():
            if f.get("path"):
                os.unlink(f["path"])
    rec["commands"] = example_commands(layout, subs, full, seconds)
    return rec


def example_commands(layout, subs, full, seconds=None):
    """Each subject's command in its first random-read cell on the disk (O_DIRECT at qd32
    where it runs there)."""
    out = {}
    for s in subs:
        reads = [c for c in cells(full, seconds) if c["fs"] == "disk" and c["rw"] == "randread" and not applies(s, c)]
        cell = next((c for c in reads if c["depth"] == 32), reads[0] if reads else None)
        if cell:
            argv = command(layout, s, "FILE", cell)
            out[s] = " ".join([os.path.basename(argv[0])] + argv[1:])
    return out


def _fmt(v, digits):
    if not v:
        return "-"
    return f"{v['median']:.{digits}f} ({v['min']:.{digits}f}\u2013{v['max']:.{digits}f})"


def _ratio(r):
    return "-" if r is None else f"{r:.2f}x"


def section(rec):
    """The report's section (markdown)."""
    out = ["### fileio", "",
           "One file, one thread (one fio job), 4 KiB random reads at queue depth 1, 32 and 128, 4 KiB random "
           "writes and 1 MiB sequential writes with an fsync every 16, O_DIRECT and buffered (the file fits in "
           "the page cache), on tmpfs and on the disk. Subjects alternate run by run. CPU per operation is the "
           "process's user + system time, all its threads (wait4), over its operations. Median of the runs "
           "(min\u2013max); `x fio-uring` is the ratio of medians to fio's io_uring engine in the same cell "
           "(for CPU, lower is better)."]
    if rec.get("error"):
        return "\n".join(out + ["", f"Not run: {rec['error']}."])
    files = rec.get("files")
    if files:
        for fs, f in files.items():
            if f.get("error"):
                out += ["", f"- {fs}: not run: {f['error']}."]
            else:
                d = "O_DIRECT supported" if not f.get("direct") else f"O_DIRECT not supported ({f['direct']})"
                out += [f"- {fs}: a {f['bytes'] >> 20} MiB file in {f['dir']} ({f['type']}); {d}."]
    elif rec.get("file_dir"):
        out += ["", f"The file: {rec.get('file_bytes', 0) >> 20} MiB in {rec['file_dir']}."]
    for s, why in (rec.get("missing") or {}).items():
        out.append(f"- {s}: skipped: {why}.")
    if rec.get("commands"):
        out += ["", "Commands (disk, random reads, O_DIRECT at qd32 where the subject runs there):", ""]
        out += [f"- {s}: `{c}`" for s, c in rec["commands"].items()]
    subs = rec.get("subjects") or ["ringio", "fio"]
    base = rec.get("baseline") or "fio"
    rows = ["| cell | subject | IOPS | MB/s | CPU \u00b5s/op | IOPS x fio-uring | CPU x fio-uring |",
            "|---|---|---|---|---|---|---|"]
    for c in rec["cells"]:
        sm = c["summary"]
        rt = c.get("ratios") or ratios(sm, base)
        if c.get("not_run", {}).get("all"):
            rows.append(f"| {c['label']} | - | not run: {c['not_run']['all']} | | | | |")
            continue
        first = True
        for s in subs:
            if s not in sm:
                continue
            v = sm[s]
            rows.append(f"| {c['label'] if first else ''} | {s} | {_fmt(v.get('iops'), 0)} | "
                        f"{_fmt(v.get('mb_s'), 1)} | {_fmt(v.get('cpu_us_per_io'), 2)} | "
                        f"{_ratio(rt.get(s, {}).get('iops'))} | {_ratio(rt.get(s, {}).get('cpu_us_per_io'))} |")
            first = False
    errs = [e for c in rec["cells"] for e in c["errors"]]
    if errs:
        rows += ["", f"Failed runs: {len(errs)} (first: {errs[0]})."]
    return "\n".join(out + [""] + rows)
