#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Puts the SPDX license line first in every source file of the repository.

    scripts/spdx.py          add the line where it is missing
    scripts/spdx.py --check  list the files without it; exit 1 if there are any
                             (77, skipped, outside a git checkout)

A file's first line becomes the SPDX line (after a shebang line, if any); nothing else
in the file changes. Test data, corpora and generated files are left alone.
"""
import pathlib
import subprocess
import sys

LICENSE = "SPDX-License-Identifier: Apache-2.0"
ROOT = pathlib.Path(__file__).resolve().parent.parent

SLASH = {".cpp", ".hpp", ".h", ".rs"}
HASH = {".py", ".sh", ".cmake", ".in", ".toml"}
HASH_NAMES = {"CMakeLists.txt", "Makefile"}
SLASH_PATHS = {"bench/peers/uring_exec/compat/format"}
SKIP_PREFIXES = ("fuzz/corpus/", "tests/http/site/")


def comment_for(path: str, first_line: str):
    """The comment marker the file takes, or None when it is not a source file."""
    if path.startswith(SKIP_PREFIXES):
        return None
    p = pathlib.PurePosixPath(path)
    if path in SLASH_PATHS or p.suffix in SLASH:
        return "//"
    if p.suffix in HASH or p.name in HASH_NAMES:
        return "#"
    if p.suffix == "" and first_line.startswith("#!"):
        return "#"
    return None


def tracked_files():
    """The files git tracks, or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [f for f in out.decode().split("\0") if f]


def has_line(lines):
    head = lines[1:2] if lines and lines[0].startswith("#!") else lines[:1]
    return any(LICENSE in line for line in head)


def main(argv):
    check = "--check" in argv
    files = tracked_files()
    if files is None:
        print("not a git checkout: nothing to check")
        return 77
    missing = []
    for path in files:
        file = ROOT / path
        if not file.is_file():
            continue
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:  # images and other binary files
            continue
        lines = text.splitlines(keepends=True)
        marker = comment_for(path, lines[0] if lines else "")
        if marker is None or has_line(lines):
            continue
        missing.append(path)
        if check:
            continue
        at = 1 if lines and lines[0].startswith("#!") else 0
        lines.insert(at, f"{marker} {LICENSE}\n")
        with open(file, "w", encoding="utf-8", newline="") as f:
            f.write("".join(lines))
    if check:
        for path in missing:
            print(f"no SPDX line: {path}")
        return 1 if missing else 0
    print(f"added the SPDX line to {len(missing)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
