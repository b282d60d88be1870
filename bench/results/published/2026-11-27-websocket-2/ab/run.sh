#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# alternates the before and after http_server, ringio-uring only, all ws-echo cells
cd "$(git rev-parse --show-toplevel)"
ROUNDS=${1:-4}
for r in $(seq 1 $ROUNDS); do
  for v in before after; do
    dir=build/bench; [ $v = before ] && dir=build/bench-before
    bench/run --websocket --scenarios ws-echo --servers ringio-uring --repeats 1 --no-syscalls --no-plots \
      --build-dir $dir --out /tmp/wsperf-ab/$v-$r 2>&1 | grep -E "^\[" | sed "s/^/$v $r /"
  done
done
