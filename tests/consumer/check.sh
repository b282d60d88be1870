#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds tests/consumer against ringio both ways and runs it.
# usage: check.sh <ringio source dir> <ringio build dir> <c++ compiler>
set -euo pipefail
src=$1 build=$2 cxx=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

echo "== add_subdirectory"
cmake -S "$here" -B "$work/sub" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DRINGIO_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/sub" --target consumer >/dev/null
"$work/sub/consumer"

echo "== find_package after cmake --install"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/pkg" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/pkg" >/dev/null
"$work/pkg/consumer"
