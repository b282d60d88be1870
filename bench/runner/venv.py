# SPDX-License-Identifier: Apache-2.0
"""bench/.venv with the pinned plotting requirements, made once and reused
while bench/requirements.txt stays the same."""
import hashlib
import os
import subprocess
import sys


def ensure(bench_dir, log):
    """Path of the venv's python, or (None, why) when it cannot be had."""
    venv = os.path.join(bench_dir, ".venv")
    req = os.path.join(bench_dir, "requirements.txt")
    py = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".requirements.sha256")
    try:
        with open(req, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        return None, f"cannot read {req}: {e}"
    try:
        with open(stamp) as f:
            if f.read().strip() == want and os.path.exists(py):
                return py, None
    except OSError:
        pass
    log(f"setting up {os.path.relpath(venv)} from requirements.txt (once)")
    steps = []
    if not os.path.exists(py):
        steps.append([sys.executable, "-m", "venv", venv])
    steps.append([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", req])
    for argv in steps:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"`{' '.join(argv[:4])}` failed: {e}"
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
            return None, f"`{' '.join(argv[:4])}` failed: {tail[0]}"
    with open(stamp, "w") as f:
        f.write(want + "\n")
    return py, None


def plot(py, bench_dir, outdir):
    """Runs runner.plots under the venv: (files, None) or ([], why)."""
    try:
        r = subprocess.run([py, "-m", "runner.plots", os.path.abspath(outdir)], capture_output=True, text=True,
                           timeout=300, cwd=bench_dir)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [], f"plotting failed: {e}"
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-1:] or ["?"]
        return [], f"plotting failed: {tail[0]}"
    return [line for line in r.stdout.split() if line.endswith(".png")], None
