# SPDX-License-Identifier: Apache-2.0
"""The environment every result is reported with."""
import glob
import os
import platform
import re
import subprocess


def _run(argv, cwd=None):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20, cwd=cwd)
        return (r.stdout or r.stderr).strip() if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _first_line(text):
    return text.splitlines()[0] if text else None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None, False
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return (m.group(1).strip() if m else platform.processor()), bool(re.search(r"^flags\s*:.*\bhypervisor\b", text, re.M))


def mem_total_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1048576, 1)
    except OSError:
        pass
    return None


def parse_cmake_cache(text):
    vals = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_][\w-]*):[A-Z]+=(.*)$", line)
        if m:
            vals[m.group(1)] = m.group(2)
    return vals


def compiler(build_dir):
    """Compiler, version and flags of the ringio build, from CMake's cache."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            cache = parse_cmake_cache(f.read())
    except OSError:
        return {"error": f"{build_dir}/CMakeCache.txt not found"}
    bt = cache.get("CMAKE_BUILD_TYPE", "")
    flags = " ".join(x for x in (cache.get("CMAKE_CXX_FLAGS", ""),
                                 cache.get(f"CMAKE_CXX_FLAGS_{bt.upper()}", "") if bt else "") if x)
    cxx = cache.get("CMAKE_CXX_COMPILER")
    version = None
    for path in glob.glob(os.path.join(build_dir, "CMakeFiles", "*", "CMakeCXXCompiler.cmake")):
        with open(path) as f:
            t = f.read()
        i = re.search(r'CMAKE_CXX_COMPILER_ID "([^"]*)"', t)
        v = re.search(r'CMAKE_CXX_COMPILER_VERSION "([^"]*)"', t)
        if v:
            version = f"{i.group(1) if i else ''} {v.group(1)}".strip()
    return {"cxx": cxx, "version": version, "build_type": bt, "flags": flags,
            "peers_flags": "-O2 (fixed in bench/peers/CMakeLists.txt)"}


def dpkg_version(pkg):
    return _run(["dpkg-query", "-W", "-f=${Version}", pkg])


def cargo_lock_version(path, crate):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r'\[\[package\]\]\s*name = "' + re.escape(crate) + r'"\s*version = "([^"]+)"', text)
    return m.group(1) if m else None


def git_commit(root):
    sha = _run(["git", "rev-parse", "HEAD"], cwd=root)
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    if sha and dirty:
        sha += " (tracked files modified)"
    return sha


def collect(root, build_dir, usable, server_cpus, client_cpus, nofile, perf_note):
    model, hv = cpu_model()
    return {
        "kernel": platform.release(),
        "cpu": model,
        "virtualized": hv,
        "cores": os.cpu_count(),
        "usable_cpus": usable,
        "memory_gib": mem_total_gib(),
        "compiler": compiler(os.path.join(root, build_dir)),
        "liburing": dpkg_version("liburing-dev"),
        "asio": dpkg_version("libasio-dev"),
        "tokio": cargo_lock_version(os.path.join(root, "bench/peers/tokio/Cargo.lock"), "tokio"),
        "rustc": _run(["rustc", "--version"]),
        "nginx": dpkg_version("nginx-light") or _first_line(_run(["nginx", "-v"])),
        "h2o": dpkg_version("h2o") or _first_line(_run(["h2o", "--version"])),
        "wrk": dpkg_version("wrk"),
        "ab": dpkg_version("apache2-utils"),
        "python": platform.python_version(),
        "git_commit": git_commit(root),
        "server_cpus": server_cpus,
        "client_cpus": client_cpus,
        "nofile": nofile,
        "ephemeral_ports": ephemeral_ports(),
        "clk_tck": os.sysconf("SC_CLK_TCK"),
        "perf": perf_note,
    }


def ephemeral_ports():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = f.read().split()
            return int(hi) - int(lo) + 1
    except (OSError, ValueError):
        return 28232
