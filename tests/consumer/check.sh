#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Uses ringio from outside projects, every documented way, and runs what they build:
# the installed package without components (Boost and OpenSSL disabled) and with all
# of them, a Debug (-O0) program of 100,000 inline co_awaits, version requests,
# pkg-config, and add_subdirectory (with and without the optional libraries).
# usage: check.sh <ringio source dir> <ringio build dir> <c++ compiler> [compiler launcher]
set -euo pipefail
src=$1 build=$2 cxx=$3 launcher=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
prefix=$work/prefix
configure() {  # configure <source> <build> [cmake args...]
  local from=$1 to=$2
  shift 2
  cmake -S "$from" -B "$to" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
    ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} "$@" >"$to.log" 2>&1 ||
    { cat "$to.log"; return 1; }
}

echo "== cmake --install"
cmake --install "$build" --prefix "$prefix" >/dev/null
config_dir=$(dirname "$(find "$prefix" -name ringioConfig.cmake)")
pc_dir=$(dirname "$(find "$prefix" -name ringio.pc)")

echo "== the core package names neither Boost nor OpenSSL"
core_files=("$config_dir"/ringioConfig.cmake "$config_dir"/ringioConfigVersion.cmake
            "$config_dir"/ringioTargets*.cmake "$pc_dir"/ringio.pc)
if grep -n -i -E 'boost|openssl|ssl|crypto' "${core_files[@]}"; then
  echo "FAILED: the core package's files above name Boost or OpenSSL"; exit 1
fi
echo "ringio::ringio links: $(sed -n 's/.*INTERFACE_LINK_LIBRARIES "\(.*\)"/\1/p' "$config_dir"/ringioTargets.cmake)"

echo "== find_package(ringio 0.3), no components, with Boost and OpenSSL disabled"
configure "$here/core" "$work/core" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON
grep -- '-- ringio' "$work/core.log"
cmake --build "$work/core" >/dev/null
"$work/core/core_consumer"

echo "== a Debug (-O0) consumer: 100,000 co_awaits of tasks that complete at once"
configure "$here/core" "$work/debug" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug
cmake --build "$work/debug" --target inline_awaits >/dev/null
if grep -E -- '-O[123s]' "$work/debug/build.ninja" "$work/debug"/CMakeFiles/*.dir/flags.make 2>/dev/null; then
  echo "FAILED: the Debug consumer is optimised"; exit 1
fi
"$work/debug/inline_awaits"

echo "== find_package(ringio 0.3 COMPONENTS fiber tls http https)"
configure "$here" "$work/all" -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$work/all" >/dev/null
"$work/all/consumer"

echo "== pkg-config --cflags --libs ringio-fiber ringio-http"
export PKG_CONFIG_PATH=$pc_dir
pkg-config --cflags --libs ringio-fiber ringio-http
for name in ringio ringio-fiber ringio-tls ringio-http ringio-https; do
  pkg-config --exists --print-errors "$name = $(pkg-config --modversion ringio)"
done
# shellcheck disable=SC2046  # the flags are words
$launcher "$cxx" -std=c++20 -O1 "$here/pkgconfig.cpp" -o "$work/pkgconfig" \
  $(pkg-config --cflags --libs ringio-fiber ringio-http)
"$work/pkgconfig"

echo "== add_subdirectory(ringio): every library defined, no apps, examples or tests"
configure "$here/core" "$work/sub" -DRINGIO_SOURCE_DIR="$src"
echo "== add_subdirectory(ringio) without fiber and TLS, Boost and OpenSSL disabled"
configure "$here/core" "$work/sub-core" -DRINGIO_SOURCE_DIR="$src" -DRINGIO_WITH_FIBER=OFF \
  -DRINGIO_WITH_TLS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON
cmake --build "$work/sub-core" --target core_consumer >/dev/null
"$work/sub-core/core_consumer"
