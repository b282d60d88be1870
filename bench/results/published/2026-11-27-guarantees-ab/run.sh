#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A/B of the hot path on a quiet machine: the same runner, the base build and this one.
export LD_LIBRARY_PATH=$PWD/build/ab/lib
uname -r; nproc; python3 --version; ls /usr/lib/x86_64-linux-gnu/liburing* 2>/dev/null
ulimit -n 20000 2>/dev/null
for round in 1 2; do
  for v in base new; do
    bench/run --quick --servers ringio-uring,ringio-epoll --scenarios echo,pingpong --repeats 5 --no-syscalls --no-plots \
      --build-dir build/ab/$v --out $OUT/$v-$round > $OUT/$v-$round.log 2>&1
    echo "== $v round $round: $?"; tail -3 $OUT/$v-$round.log
  done
done
