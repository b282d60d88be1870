#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds dyco_echo_server, the churn scenario's echo server on dyco-coroutine (a C
# coroutine library with socket hooks), from dyco's public sources. Nothing is
# downloaded: give the source tree.
#
#   bench/peers/dyco/build.sh DYCO_DIR [OUT_DIR]
#
# DYCO_DIR  a checkout of github.com/piaodazhu/dyco-coroutine (src/, include/dyco/)
# OUT_DIR   where dyco_echo_server goes (default build/bench/bench/peers, where
#           bench/run looks; with --build-dir DIR it looks in DIR/bench/peers)
#
# dyco's sources (every src/*.c and src/uctx_asm.S, its hooks on as its header sets
# them) are compiled with -O3 as dyco's own Makefile and meson build do, without its
# optional OpenSSL part, and linked with dyco_echo_server.c (this directory). Needs gcc.
set -euo pipefail

usage() { sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -eq 1 || $# -eq 2 ]] || usage
[[ $1 != -* ]] || usage
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
dyco=$(cd "$1" 2>/dev/null && pwd) || usage
out=${2:-$root/build/bench/bench/peers}
for f in "$dyco/include/dyco/dyco_coroutine.h" "$dyco/src/dyco_socket.c" "$dyco/src/dyco_hook.c" \
         "$dyco/src/uctx_asm.S"; do
  [[ -f $f ]] || { echo "build.sh: missing $f (is $1 a dyco-coroutine checkout?)" >&2; exit 2; }
done
grep -q '^#define[[:space:]]*COROUTINE_HOOK' "$dyco/include/dyco/dyco_coroutine.h" ||
  { echo "build.sh: COROUTINE_HOOK is off in $dyco/include/dyco/dyco_coroutine.h: the server needs dyco's hooks" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objs=()
for src in "$dyco"/src/*.c "$dyco"/src/*.S; do
  obj="$work/$(basename "${src%.*}").o"
  gcc -O3 -w -Wa,--noexecstack -I"$dyco/include" -c "$src" -o "$obj"
  objs+=("$obj")
done
mkdir -p "$out"
gcc -O3 -Wall -Wextra -Werror -isystem "$dyco/include" "$here/dyco_echo_server.c" "${objs[@]}" \
  -o "$out/dyco_echo_server" -lpthread -ldl
echo "built $out/dyco_echo_server (dyco $(git -C "$dyco" rev-parse --short HEAD 2>/dev/null || echo "source tree"))"
