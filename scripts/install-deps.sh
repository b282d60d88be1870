#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages a target needs, only when some are missing.
# Usage: scripts/install-deps.sh test|bench
set -euo pipefail

# zlib1g-dev: permessage-deflate of ringio::http (WebSocket compression).
# libclang-rt-16-dev carries the sanitizer runtimes and libFuzzer
# (libclang_rt.fuzzer-x86_64.a) for the sanitizer builds and the fuzz targets.
common=(build-essential cmake ninja-build pkg-config liburing-dev libgtest-dev
        clang-16 libclang-rt-16-dev python3 libboost-dev libboost-context-dev doxygen
        libssl-dev openssl zlib1g-dev)
# prometheus and python3-prometheus-client check the /metrics page (tests/http/metrics_app_test.cpp);
# tmux drives ringio-top's live view (tests/apps/ringio_top_test.py); wrk and nginx-light
# drive the restart tests (tests/apps/restart_test.cpp) and the nginx client tests.
# libhiredis-dev and redis-server: a C library that brings its own descriptor, driven
# through wait_readable/wait_writable (tests/integration/hiredis_async_test.cpp), and its
# blocking API on fibers through the system-call hooks (fiber_hooks_hiredis_test.cpp);
# libpq-dev and postgresql: libpq's blocking API on fibers (fiber_hooks_libpq_test.cpp);
# libcurl4-openssl-dev: libcurl's easy API on fibers (fiber_hooks_curl_test.cpp).
test_only=(chromium curl clang-format-16 clang-tidy-16 python3-websockets prometheus python3-prometheus-client tmux
           wrk nginx-light libhiredis-dev redis-server libpq-dev postgresql libcurl4-openssl-dev)
# libhiredis-dev and redis-server: bench/run's hiredis scenario (apps/hiredis_bench).
bench_only=(libasio-dev libbenchmark-dev python3-venv wrk apache2-utils nginx-light
            cargo-web rustc-web linux-perf procps fio h2o libhiredis-dev redis-server)

case "${1:-}" in
  test)  want=("${common[@]}" "${test_only[@]}") ;;
  bench) want=("${common[@]}" "${bench_only[@]}") ;;
  *) echo "usage: $0 test|bench" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts nginx and prometheus on install; the benchmark and the tests start
# their own instances.
if [[ " ${missing[*]} " == *" nginx-light "* ]]; then
  "${sudo[@]}" service nginx stop >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" h2o "* ]]; then
  "${sudo[@]}" service h2o stop >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" redis-server "* ]]; then
  "${sudo[@]}" service redis-server stop >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" postgresql "* ]]; then
  "${sudo[@]}" service postgresql stop >/dev/null 2>&1 || true
fi
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  "${sudo[@]}" service prometheus stop >/dev/null 2>&1 || true
fi
