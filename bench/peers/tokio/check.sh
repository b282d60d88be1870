#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end checks for tokio_server: builds it, then for both runtimes and
# 1 and 2 threads runs every mode against real clients on 127.0.0.1 (Python
# byte-exact clients, wrk, ab, curl), plus the CLI, port-in-use and signal
# contract. Every load is bounded in time and every server is stopped by PID.
# Exits non-zero if anything fails.
#
#   bench/peers/tokio/check.sh            # build (--locked) and check
#   SKIP_BUILD=1 bench/peers/tokio/check.sh
#   QUICK=1 ...                            # only --threads 2, fewer runs
set -u

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
bin="$here/target/release/tokio_server"
client="$here/check_client.py"
logdir="$(mktemp -d "${TMPDIR:-/tmp}/tokio_check.XXXXXX")"

fails=0
passes=0
server_pid=""
aux_pid=""

ok() { passes=$((passes + 1)); echo "  ok   $*"; }
bad() { fails=$((fails + 1)); echo "  FAIL $*"; }

cleanup() {
    for p in $server_pid $aux_pid; do
        if kill -0 "$p" 2>/dev/null; then
            kill -KILL "$p" 2>/dev/null
            wait "$p" 2>/dev/null
        fi
    done
    rm -rf "$logdir"
}
trap cleanup EXIT

for tool in python3 wrk ab curl; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

if [ -z "${SKIP_BUILD:-}" ]; then
    echo "== build"
    cargo build --release --locked -j2 || { echo "build failed" >&2; exit 1; }
fi
[ -x "$bin" ] || { echo "no binary at $bin" >&2; exit 1; }

# Sets $port to the first port from $next_port up that nothing on 127.0.0.1
# is bound to; each call moves on, so no two servers share a port.
next_port=18400
pick_port() {
    local p
    p=$(python3 - "$next_port" <<'EOF'
import socket, sys
for p in range(int(sys.argv[1]), 19000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        print(p)
        break
    except OSError:
        pass
    finally:
        s.close()
EOF
)
    [ -n "$p" ] || { echo "no free port in 18400-18999" >&2; exit 1; }
    next_port=$((p + 1))
    port=$p
}

# start_server ARGS... : starts it in the background, waits for the start-up
# line; sets server_pid and server_out.
start_server() {
    server_out="$logdir/server.$RANDOM.out"
    "$bin" "$@" >"$server_out" 2>"$server_out.err" &
    server_pid=$!
    local i
    for i in $(seq 1 100); do
        if grep -q "^tokio_server: mode=" "$server_out" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            break
        fi
        sleep 0.05
    done
    bad "server did not start: $* ($(cat "$server_out.err" 2>/dev/null))"
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=""
    return 1
}

# stop_server [SIGNAL] : signals the server, expects exit 0 within 5 s.
stop_server() {
    local sig="${1:-TERM}" i rc
    [ -n "$server_pid" ] || return 0
    if ! kill -0 "$server_pid" 2>/dev/null; then
        wait "$server_pid"
        bad "server had already exited (status $?)"
        server_pid=""
        return
    fi
    kill "-$sig" "$server_pid"
    for i in $(seq 1 100); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        bad "server still running 5 s after SIG$sig"
        kill -KILL "$server_pid"
    fi
    wait "$server_pid"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        ok "SIG$sig -> exit 0"
    else
        bad "SIG$sig -> exit $rc"
    fi
    server_pid=""
}

run_http_tools() {
    local port=$1 url="http://127.0.0.1:$1/" out
    out="$logdir/wrk.out"
    if timeout 30 wrk -t1 -c100 -d3s --latency "$url" >"$out" 2>&1; then
        if grep -qE "Socket errors|Non-2xx" "$out"; then
            bad "wrk reported errors: $(grep -E 'Socket errors|Non-2xx' "$out")"
        else
            ok "wrk -t1 -c100 -d3s: $(grep 'Requests/sec' "$out" | tr -s ' '), p99$(grep ' 99%' "$out" | tr -s ' ')"
        fi
    else
        bad "wrk failed: $(tail -3 "$out")"
    fi

    out="$logdir/ab.out"
    if timeout 120 ab -q -c100 -n20000 "$url" >"$out" 2>&1 &&
        grep -qE "^Complete requests: +20000$" "$out" &&
        grep -qE "^Failed requests: +0$" "$out" &&
        ! grep -q "Non-2xx" "$out"; then
        ok "ab -c100 -n20000: 0 failed, $(grep 'Requests per second' "$out" | tr -s ' ')"
    else
        bad "ab -c100 -n20000: $(grep -E 'Complete|Failed|Non-2xx|apr_' "$out" | tr '\n' ' ')"
    fi

    out="$logdir/abk.out"
    if timeout 120 ab -q -k -c100 -n20000 "$url" >"$out" 2>&1 &&
        grep -qE "^Failed requests: +0$" "$out" &&
        grep -qE "^Keep-Alive requests: +20000$" "$out"; then
        ok "ab -k -c100 -n20000: 0 failed, all keep-alive, $(grep 'Requests per second' "$out" | tr -s ' ')"
    else
        bad "ab -k -c100 -n20000: $(grep -E 'Complete|Failed|Keep-Alive|apr_' "$out" | tr '\n' ' ')"
    fi

    local body
    body=$(timeout 10 curl -s --http1.0 "$url")
    if [ "$body" = "Hello world!" ]; then ok "curl --http1.0"; else bad "curl --http1.0 got '$body'"; fi
    body=$(timeout 10 curl -s "$url")
    if [ "$body" = "Hello world!" ]; then ok "curl (HTTP/1.1)"; else bad "curl got '$body'"; fi
}

check_limits() {
    local soft hard
    read -r soft hard < <(awk '/Max open files/ {print $4, $5}' "/proc/$server_pid/limits")
    if [ "$soft" = "$hard" ]; then
        ok "RLIMIT_NOFILE soft = hard ($soft)"
    else
        bad "RLIMIT_NOFILE soft $soft, hard $hard"
    fi
}

thread_counts="1 2"
[ -n "${QUICK:-}" ] && thread_counts="2"

for runtime in mt per-core; do
    for threads in $thread_counts; do
        for mode in echo pong http; do
            pick_port
            echo "== $mode, --runtime $runtime --threads $threads, port $port"
            start_server --mode "$mode" --port "$port" --threads "$threads" --runtime "$runtime" || continue
            line=$(head -1 "$server_out")
            expect="tokio_server: mode=$mode port=$port threads=$threads runtime=$runtime"
            case "$line" in
                "$expect"*) ok "start-up line: $line" ;;
                *) bad "start-up line '$line'" ;;
            esac
            [ "$mode" = echo ] && check_limits
            if timeout 300 python3 "$client" "$mode" "$port" >"$logdir/client.out" 2>&1; then
                sed 's/^/       /' "$logdir/client.out"
                ok "python $mode client"
            else
                sed 's/^/       /' "$logdir/client.out"
                bad "python $mode client"
            fi
            if [ "$mode" = http ]; then
                run_http_tools "$port"
            fi
            stop_server TERM
        done
    done
done

echo "== pong with --block 1000"
pick_port
if start_server --mode pong --port "$port" --block 1000 --runtime per-core --threads 2; then
    if timeout 120 python3 "$client" pong "$port" --block 1000 >"$logdir/client.out" 2>&1; then
        ok "python pong client, block 1000"
    else
        sed 's/^/       /' "$logdir/client.out"
        bad "python pong client, block 1000"
    fi
    stop_server TERM
fi

echo "== SIGINT"
for runtime in mt per-core; do
    pick_port
    start_server --mode echo --port "$port" --threads 2 --runtime "$runtime" && stop_server INT
done

echo "== CLI"
expect_exit() {
    local want=$1 rc
    shift
    "$bin" "$@" >"$logdir/cli.out" 2>"$logdir/cli.err" </dev/null &
    local pid=$!
    local i
    for i in $(seq 1 60); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        wait "$pid" 2>/dev/null
        bad "'$*' kept running (expected exit $want)"
        return
    fi
    wait "$pid"
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "'$*' -> exit $rc (expected $want): $(head -1 "$logdir/cli.err")"
    elif [ "$want" -eq 2 ] && ! grep -q "^usage:" "$logdir/cli.err"; then
        bad "'$*' -> exit 2 but no usage on stderr"
    else
        ok "'$*' -> exit $rc $(head -1 "$logdir/cli.err")"
    fi
}
expect_exit 0 --help
grep -q "^usage:" "$logdir/cli.out" && ok "--help prints usage to stdout" || bad "--help printed no usage"
expect_exit 2
expect_exit 2 --port 18999
expect_exit 2 --mode echo
expect_exit 2 --mode nope --port 18999
expect_exit 2 --mode echo --port abc
expect_exit 2 --mode echo --port 70000
expect_exit 2 --mode echo --port 18999 --threads 0
expect_exit 2 --mode echo --port 18999 --block 0
expect_exit 2 --mode echo --port 18999 --runtime fibers
expect_exit 2 --mode echo --port 18999 --frobnicate 1
expect_exit 2 --mode echo --port

echo "== port in use"
pick_port
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
time.sleep(30)
' "$port" &
aux_pid=$!
sleep 0.5
expect_exit 1 --mode echo --port "$port" --runtime mt
expect_exit 1 --mode echo --port "$port" --runtime per-core --threads 2
kill "$aux_pid" 2>/dev/null
wait "$aux_pid" 2>/dev/null
aux_pid=""
# A running per-core server's SO_REUSEPORT group must not be joined silently.
pick_port
if start_server --mode echo --port "$port" --runtime per-core --threads 2; then
    expect_exit 1 --mode echo --port "$port" --runtime per-core --threads 2
    expect_exit 1 --mode echo --port "$port" --runtime mt
    stop_server TERM
fi

echo "== https (rustls)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -keyout "$logdir/key.pem" -out "$logdir/cert.pem" 2>/dev/null
expect_exit 2 --mode echo --port 18999 --tls-cert "$logdir/cert.pem" --tls-key "$logdir/key.pem"
expect_exit 2 --mode http --port 18999 --tls-cert "$logdir/cert.pem"
expect_exit 1 --mode http --port 18999 --tls-cert "$logdir/missing.pem" --tls-key "$logdir/key.pem"
for runtime in mt per-core; do
    pick_port
    if start_server --mode http --port "$port" --runtime "$runtime" --tls-cert "$logdir/cert.pem" --tls-key "$logdir/key.pem"; then
        body=$(timeout 10 curl -s --cacert "$logdir/cert.pem" "https://localhost:$port/" --resolve "localhost:$port:127.0.0.1")
        if [ "$body" = "Hello world!" ]; then ok "curl https ($runtime, verified)"; else bad "curl https ($runtime) got '$body'"; fi
        out=$(timeout 10 wrk -t1 -c10 -d1s "https://127.0.0.1:$port/" 2>&1)
        if echo "$out" | grep -q "Requests/sec" && ! echo "$out" | grep -q "Non-2xx\|Socket errors"; then
            ok "wrk https ($runtime)"
        else
            bad "wrk https ($runtime): $out"
        fi
        # Garbage instead of a ClientHello ends that connection only.
        printf 'GET / HTTP/1.1\r\n\r\n' | timeout 5 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read()); s.settimeout(3); s.recv(100)' "$port" >/dev/null 2>&1
        body=$(timeout 10 curl -sk "https://127.0.0.1:$port/")
        if [ "$body" = "Hello world!" ]; then ok "https after a plain-text client ($runtime)"; else bad "https after garbage ($runtime) got '$body'"; fi
        stop_server TERM
    fi
done

echo
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
