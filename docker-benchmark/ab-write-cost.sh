#!/usr/bin/env bash
# Quick A/B of what persistence and replication cost a write, in one run: one pinned
# node (--shards 1, SERVER_CORE), redis-benchmark SET P=16 on CLIENT_CORE, alternating
#   off   --persistence off
#   on    persistence to a local folder (the default)
#   repl  --persistence off, replicating to 2 peers that are down (the sender's cost)
# for ROUNDS rounds; prints per configuration the median rps and the server's CPU
# seconds (every thread, /proc/PID/stat), each as a ratio against "off".
# Usage: docker-benchmark/ab-write-cost.sh   (env: ROUNDS=3 REQUESTS=1000000 MERIDIAN_BIN=...)
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_CORE="${SERVER_CORE:-0}"
CLIENT_CORE="${CLIENT_CORE:-1}"
ROUNDS="${ROUNDS:-3}"
REQUESTS="${REQUESTS:-1000000}"
if [[ -z "${MERIDIAN_BIN:-}" ]]; then
    cargo build --release --bin meridian >&2
    MERIDIAN_BIN=target/release/meridian
fi
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is required (apt-get install redis-tools)" >&2; exit 1; }
export MERIDIAN_CLUSTER_SECRET="ab-write-cost-cluster-secret"

TMP="$(mktemp -d)"
PID=""
cleanup() { [[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# one LABEL extra-args... -> "LABEL rps cpu_seconds"
one() {
    local label="$1"; shift
    local port; port=$(free_port)
    taskset -c "$SERVER_CORE" "$MERIDIAN_BIN" --port "$port" --shards 1 --data-dir "$TMP/$label-$RANDOM" "$@" 2>>"$TMP/server.log" &
    PID=$!
    for _ in $(seq 1 200); do [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break; sleep 0.05; done
    local before rps after
    before=$(awk '{print $14 + $15}' "/proc/$PID/stat")
    rps=$(taskset -c "$CLIENT_CORE" redis-benchmark -h 127.0.0.1 -p "$port" -t set -n "$REQUESTS" -r 100000000 -c 50 -P 16 -q --csv \
        | awk -F, '/"SET"/ {gsub(/"/,"",$2); print $2}')
    after=$(awk '{print $14 + $15}' "/proc/$PID/stat")
    kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=""
    echo "$label $rps $(echo "($after - $before) / 100" | bc -l)"
}

for _ in $(seq 1 "$ROUNDS"); do
    one off --persistence off
    one on
    one repl --persistence off --node-id 1 --repl-port 0 --peers "127.0.0.1:$(free_port),127.0.0.1:$(free_port)"
done | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    label, rps, cpu = line.split()
    runs.setdefault(label, []).append((float(rps), float(cpu)))
base_rps = statistics.median(r for r, _ in runs["off"])
base_cpu = statistics.median(c for _, c in runs["off"])
for label, values in runs.items():
    rps = statistics.median(r for r, _ in values)
    cpu = statistics.median(c for _, c in values)
    print("%-4s  %9.0f rps (ratio %.3f)   %5.2f s CPU (ratio off/this %.3f)   rounds: %s"
          % (label, rps, rps / base_rps, cpu, base_cpu / cpu, " ".join("%.0f" % r for r, _ in values)))
'
