#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks peer servers against the peer contract (README.md) with real
# clients: the Python clients of check_clients.py, wrk, ab and curl. All
# traffic goes to 127.0.0.1, every load is bounded in time, and every server
# is stopped by its PID.
#
# usage: check_peers.sh [SERVER_BINARY...]
#   With no argument it checks the four C++ peers in $PEERS_BUILD_DIR
#   (default: build/peers-dev at the repository root).
# Needs python3, wrk, ab (apache2-utils) and curl. Exits 1 if any check fails.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${PEERS_BUILD_DIR:-$root/build/peers-dev}
clients=(python3 "$here/check_clients.py")
logs=$(mktemp -d)
passed=0
failed=0
server_pid=

if [ $# -gt 0 ]; then
  servers=("$@")
else
  servers=("$build/raw_uring_server" "$build/raw_epoll_server"
           "$build/asio_server_epoll" "$build/asio_server_uring")
fi

for tool in python3 wrk ab curl; do
  command -v "$tool" >/dev/null || { echo "check_peers: $tool is missing" >&2; exit 1; }
done

cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  rm -rf "$logs"
}
trap cleanup EXIT

pass() { echo "  ok    $*"; passed=$((passed + 1)); }
fail() { echo "  FAIL  $*"; failed=$((failed + 1)); }
check() {  # check NAME COMMAND...: runs the command, passes if it exits 0
  local name=$1; shift
  if "$@" >"$logs/out" 2>&1; then
    pass "$name: $(tail -n 1 "$logs/out")"
  else
    fail "$name"; sed 's/^/        /' "$logs/out" | tail -n 15
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server BINARY ARGS...: starts it and waits for its start-up line.
start_server() {
  "$@" >"$logs/server" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do
    if grep -q "mode=" "$logs/server"; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  fail "start $*: $(cat "$logs/server")"
  stop_server quiet
  return 1
}

# stop_server [quiet] [SIGNAL]: stops the server, which must exit 0 promptly.
stop_server() {
  local signal=${2:-TERM} rc
  kill -s "$signal" "$server_pid" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$server_pid" 2>/dev/null
  wait "$server_pid"; rc=$?
  server_pid=
  if [ "${1:-}" != quiet ]; then
    if [ "$rc" -eq 0 ]; then pass "SIG$signal: exit 0"; else fail "SIG$signal: exit $rc"; fi
  fi
}

fd_count() { ls "/proc/$server_pid/fd" | wc -l; }

# expect_fds N: the server is back to N open descriptors (no leaked sockets).
expect_fds() {
  local now
  for _ in $(seq 30); do now=$(fd_count); [ "$now" -eq "$1" ] && break; sleep 0.1; done
  if [ "$now" -eq "$1" ]; then pass "no leaked descriptors ($now open)"; else fail "descriptors: $now open, $1 before"; fi
}

# With --threads 2 both workers must have run, i.e. both got connections.
# The C++ peers name their workers worker-N; for another server, count its
# threads other than the main one and io_uring's kernel workers (iou-*).
expect_busy_workers() {
  local task comm pattern='^worker-' busy=0 idle=0 ticks
  grep -qs '^worker-' /proc/"$server_pid"/task/*/comm || pattern='^'
  for task in /proc/"$server_pid"/task/*; do
    comm=$(cat "$task/comm")
    [ "${task##*/}" = "$server_pid" ] && continue
    [[ $comm == iou-* ]] && continue
    [[ $comm =~ $pattern ]] || continue
    ticks=$(awk '{print $14 + $15}' "$task/stat")
    if [ "$ticks" -gt 0 ]; then busy=$((busy + 1)); else idle=$((idle + 1)); fi
  done
  if [ "$busy" -ge 2 ]; then pass "threads: $busy threads served connections ($idle idle)"
  else fail "threads: $busy threads busy, $idle idle"; fi
}

expect_exit() {  # expect_exit CODE NAME COMMAND...
  local want=$1 name=$2 rc; shift 2
  timeout 10 "$@" >"$logs/out" 2>&1; rc=$?
  if [ "$rc" -eq "$want" ]; then pass "$name: exit $rc"
  else fail "$name: exit $rc, want $want: $(head -n 2 "$logs/out")"; fi
}

check_cli() {
  local bin=$1 port
  expect_exit 0 "--help" "$bin" --help
  expect_exit 2 "no arguments" "$bin"
  expect_exit 2 "bad mode" "$bin" --mode bogus --port 19999
  expect_exit 2 "missing port" "$bin" --mode echo
  expect_exit 2 "bad port" "$bin" --mode echo --port 70000
  expect_exit 2 "bad threads" "$bin" --mode echo --port 19999 --threads 0
  expect_exit 2 "unknown option" "$bin" --mode echo --port 19999 --frobnicate 1

  port=$(free_port)
  start_server "$bin" --mode echo --port "$port" || return
  expect_exit 1 "port in use (same server)" "$bin" --mode echo --port "$port"
  stop_server quiet
  python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $port)); s.listen(); time.sleep(15)" &
  local holder=$!
  sleep 0.3
  expect_exit 1 "port in use (other listener)" "$bin" --mode echo --port "$port"
  kill "$holder"; wait "$holder" 2>/dev/null
}

check_echo() {
  local bin=$1 port fds
  port=$(free_port)
  start_server "$bin" --mode echo --port "$port" --threads 2 || return
  fds=$(fd_count)
  check "echo 50 connections, 1 B .. 1 MiB" timeout 120 "${clients[@]}" echo --port "$port" --conns 50
  check "echo stream" timeout 30 "${clients[@]}" stream --port "$port" --seconds 2
  check "resets mid-stream" timeout 60 "${clients[@]}" abuse --port "$port" --conns 200
  check "echo after resets" timeout 60 "${clients[@]}" echo --port "$port" --conns 4 --payloads 2
  expect_fds "$fds"
  stop_server "" INT
}

check_pong() {
  local bin=$1 port block
  for block in 16384 1000; do
    port=$(free_port)
    start_server "$bin" --mode pong --port "$port" --threads 2 --block "$block" || return
    check "pong block $block" timeout 120 "${clients[@]}" pong --port "$port" --conns 20 --rounds 100 --block "$block"
    stop_server
  done
}

check_http() {
  local bin=$1 port fds url rps
  port=$(free_port)
  url="http://127.0.0.1:$port/"
  start_server "$bin" --mode http --port "$port" --threads 2 || return
  fds=$(fd_count)

  timeout 30 wrk -t1 -c100 -d3s --latency "$url" >"$logs/wrk" 2>&1
  rps=$(awk '/^Requests\/sec/ {print $2}' "$logs/wrk")
  if [ -n "$rps" ] && ! grep -qE "Socket errors|Non-2xx" "$logs/wrk" && [ "${rps%.*}" -gt 0 ]; then
    pass "wrk -c100 3s: $rps req/s, no errors"
  else
    fail "wrk"; sed 's/^/        /' "$logs/wrk"
  fi
  expect_busy_workers

  local keepalive
  for keepalive in "" -k; do
    timeout 60 ab -q $keepalive -s 10 -c100 -n20000 "$url" >"$logs/ab" 2>&1
    if grep -qE "^Complete requests: +20000" "$logs/ab" && grep -qE "^Failed requests: +0" "$logs/ab"; then
      pass "ab $keepalive -c100 -n20000: $(awk '/^Requests per second/ {print $4}' "$logs/ab") req/s, 0 failed"
    else
      fail "ab $keepalive"; sed 's/^/        /' "$logs/ab" | tail -n 25
    fi
  done

  if [ "$(timeout 10 curl -s --http1.0 "$url")" = "Hello world!" ]; then pass "curl --http1.0"
  else fail "curl --http1.0"; fi
  check "http framing" timeout 60 "${clients[@]}" http --port "$port"
  expect_fds "$fds"
  stop_server
}

for bin in "${servers[@]}"; do
  name=$(basename "$bin")
  if [ ! -x "$bin" ]; then
    echo "== $name"; fail "$bin is not built"; continue
  fi
  echo "== $name: command line";  check_cli "$bin"
  echo "== $name: echo";          check_echo "$bin"
  echo "== $name: pong";          check_pong "$bin"
  echo "== $name: http";          check_http "$bin"
done

echo "check_peers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
