#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command on a host that stalls: every 1-2 s, every CPU is taken for STALL_MS
# (default 250) by real-time (SCHED_FIFO) spinners, so nothing else runs, as on an
# overcommitted CI machine. No signal reaches the command (SIGSTOP would make blocking
# calls with timeouts fail with EINTR, which a loaded host never does). Needs root (or
# CAP_SYS_NICE) for chrt. Usage: scripts/stall-host.sh COMMAND [ARG...]
#   e.g. scripts/stall-host.sh ctest --test-dir build/sanitize -j 4
set -uo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi
if ! chrt -f 1 true 2>/dev/null; then
  echo "$0: cannot run real-time threads here (chrt -f needs root or CAP_SYS_NICE)" >&2
  exit 2
fi
ms=${STALL_MS:-250}
"$@" &
pid=$!
stalls=0
while kill -0 "$pid" 2>/dev/null; do
  sleep "1.$((RANDOM % 10))"
  kill -0 "$pid" 2>/dev/null || break
  spinners=()
  for ((cpu = 0; cpu < $(nproc); cpu++)); do
    chrt -f 50 taskset -c "$cpu" python3 -c "import time
end = time.monotonic() + $ms / 1000
while time.monotonic() < end: pass" &
    spinners+=($!)
  done
  wait "${spinners[@]}"
  stalls=$((stalls + 1))
done
wait "$pid"
rc=$?
echo "stall-host: $stalls stalls of $ms ms on every CPU; the command exited $rc" >&2
exit $rc
