#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The metrics-cost measurement of docs/performance.md ("Metrics"): the quick matrix's
# pingpong, echo and http-wrk cells, metrics on and off alternating in every repeat,
# in rounds; then one report over every round (summarize.py).
set -e
cd "$(dirname "$0")/../../../.."
out=bench/results/published/2026-11-27-metrics-cost
rounds=${ROUNDS:-10}
for r in $(seq 1 "$rounds"); do
  bench/run --quick --metrics-cost --scenarios pingpong,echo,http-wrk --repeats 20 \
    --no-syscalls --no-plots --build-dir build/dev --out "$out/round-$r"
done
/usr/bin/python3 "$out/summarize.py" "$out" "$out"/round-*
