#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# I/O wait of an echo_server loop, with and without IORING_ENTER_NO_IOWAIT
# (io_context_options::no_iowait; echo_server --iowait turns it off). For each mode, over
# SECONDS seconds: the growth of /proc/stat's iowait ticks (machine-wide, USER_HZ) and
# the mean of procs_blocked (tasks in I/O wait, sampled every 0.1 s), with the server
# idle (its loop asleep with a multishot accept pending) or serving echo_bench.
#   bench/iowait.sh BUILD_DIR idle|serve [SECONDS] [ROUNDS]
set -euo pipefail
build=${1:?usage: bench/iowait.sh BUILD_DIR idle|serve [SECONDS] [ROUNDS]}
load=${2:?usage: bench/iowait.sh BUILD_DIR idle|serve [SECONDS] [ROUNDS]}
secs=${3:-5}
rounds=${4:-2}
case $load in idle | serve) ;; *) echo "usage: bench/iowait.sh BUILD_DIR idle|serve [SECONDS] [ROUNDS]" >&2; exit 2 ;; esac

iowait_ticks() { awk '/^cpu /{print $6}' /proc/stat; }
blocked() { awk '/^procs_blocked/{print $2}' /proc/stat; }

measure() {  # $1: on|off
  local extra=()
  [[ $1 == off ]] && extra=(--iowait)
  local log
  log=$(mktemp)
  taskset -c 0 "$build/apps/echo_server" --port 0 --backend uring "${extra[@]}" >"$log" 2>&1 &
  local pid=$!
  local port=""
  for _ in $(seq 100); do
    port=$(grep -o '127.0.0.1:[0-9]*' "$log" | head -1 | cut -d: -f2 || true)
    [[ -n $port ]] && break
    sleep 0.05
  done
  local client=""
  if [[ $load == serve ]]; then
    taskset -c 1 "$build/apps/echo_bench" --port "$port" --connections 16 --length 64 --duration $((secs + 1)) \
      >/dev/null &
    client=$!
  fi
  sleep 0.5
  local t0 sum=0 n=0
  t0=$(iowait_ticks)
  for _ in $(seq $((secs * 10))); do
    sum=$((sum + $(blocked)))
    n=$((n + 1))
    sleep 0.1
  done
  local t1
  t1=$(iowait_ticks)
  [[ -n $client ]] && wait "$client"
  kill -TERM "$pid"
  wait "$pid" || true
  printf '%-4s %-5s iowait ticks %5d   procs_blocked mean %.2f   (%s)\n' "$1" "$load" $((t1 - t0)) \
    "$(echo "$sum / $n" | bc -l)" "$(grep -o 'no iowait [a-z]*' "$log" | head -1)"
  rm -f "$log"
}

for _ in $(seq "$rounds"); do
  measure on
  measure off
done
