#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the `pong` and `ping` programs of the uring_exec benchmarks (a C++
# std::execution executor on io_uring) from their public sources, for the
# pingpong-seed scenario of bench/run. Nothing is downloaded: give the source trees.
#
#   bench/peers/uring_exec/build.sh URING_EXEC_DIR STDEXEC_DIR LIBURING_DIR [OUT_DIR]
#
# URING_EXEC_DIR  a checkout of github.com/Caturra000/uring_exec
# STDEXEC_DIR     a checkout of github.com/NVIDIA/stdexec (its include/ is used)
# LIBURING_DIR    a checkout of github.com/axboe/liburing: uring_exec needs a newer
#                 liburing than Debian 12's 2.3 (io_uring_prep_bind, futex helpers); it
#                 is built as a static library for these two programs only
# OUT_DIR         where uring_exec_pong and uring_exec_ping go (default
#                 build/bench/bench/peers, where bench/run looks)
#
# Needs g++ with C++20 and libfmt-dev (GCC 12 has no <format>; compat/format maps the
# two std::format calls onto {fmt}). Built with -O3 as uring_exec's own Makefile does.
set -euo pipefail

usage() { sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -eq 3 || $# -eq 4 ]] || usage
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
seed=$(cd "$1" && pwd) || usage
stdexec=$(cd "$2" && pwd) || usage
liburing=$(cd "$3" && pwd) || usage
out=${4:-$root/build/bench/bench/peers}
for f in "$seed/benchmarks/pong.cpp" "$seed/benchmarks/ping.cpp" "$seed/include/uring_exec.hpp" \
         "$stdexec/include/stdexec/execution.hpp" "$liburing/configure"; do
  [[ -f $f ]] || { echo "build.sh: missing $f" >&2; exit 2; }
done
[[ -f /usr/include/fmt/format.h ]] || { echo "build.sh: needs libfmt-dev (apt-get install libfmt-dev)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$liburing" "$work/liburing"
(cd "$work/liburing" && ./configure --prefix="$work/prefix" --cc=gcc --cxx=g++ >/dev/null &&
  make -s -C src -j2 >/dev/null && make -s -C src install >/dev/null)
mkdir -p "$out"
for prog in pong ping; do
  g++ -std=c++20 -O3 -pthread -I"$here/compat" -I"$work/prefix/include" -I"$seed/include" \
    -I"$stdexec/include" "$seed/benchmarks/$prog.cpp" -o "$out/uring_exec_$prog" \
    "$work/prefix/lib/liburing.a" -lfmt
  echo "built $out/uring_exec_$prog"
done
