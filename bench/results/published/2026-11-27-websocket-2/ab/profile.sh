#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# perf record (cpu-clock) of http_server at 100 x 16 KiB, before and after binaries
cd "$(git rev-parse --show-toplevel)"
for v in before after; do
  bin=build/bench/apps/http_server; [ $v = before ] && bin=build/bench-before/apps/http_server
  port=$((41000 + RANDOM % 1000))
  taskset -c 0 $bin --port $port --threads 1 --backend uring > /dev/null 2>&1 &
  pid=$!
  sleep 0.5
  taskset -c 1 build/bench/bench/peers/ws_bench --port $port --connections 100 --length 16384 --duration 8 --path /ws/echo > /tmp/wsperf-prof-$v.out 2>&1 &
  cpid=$!
  sleep 1.5
  perf record -e cpu-clock -F 2000 -p $pid -o /tmp/wsperf-prof-$v.data -- sleep 5 > /dev/null 2>&1
  wait $cpid
  kill $pid; wait $pid 2>/dev/null
  echo "== $v $(grep -o 'RESULT.*' /tmp/wsperf-prof-$v.out | cut -c1-120)"
  perf report -i /tmp/wsperf-prof-$v.data --no-children --sort symbol --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -25
done
