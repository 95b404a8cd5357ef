#!/usr/bin/env bash
# Persistence figures for one meridian node on one core (runs without Docker):
#   - segment bytes per write, PUTs per second under load and when idle
#   - SET throughput with persistence on vs off (ratio, same run)
#   - recovery time for ~1M keys from the local folder
# Usage: docker-benchmark/bench-persistence.sh   (env: SERVER_CORE=0 CLIENT_CORE=1 KEYS=1000000 MERIDIAN_BIN=...)
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_CORE="${SERVER_CORE:-0}"
CLIENT_CORE="${CLIENT_CORE:-1}"
KEYS="${KEYS:-1000000}"
REQUESTS="${REQUESTS:-1000000}"
ROUNDS="${ROUNDS:-3}"
if [[ -z "${MERIDIAN_BIN:-}" ]]; then
    cargo build --release --bin meridian >&2
    MERIDIAN_BIN=target/release/meridian
fi
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is required (apt-get install redis-tools)" >&2; exit 1; }

TMP="$(mktemp -d)"
PID=""
cleanup() { [[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start() { # start DATA_DIR PORT extra-args...   (one core, one shard; RECOVERY_CORES=all: every core, default shards)
    local dir="$1" port="$2"; shift 2
    if [[ "${RECOVERY_CORES:-}" == "all" ]]; then
        "$MERIDIAN_BIN" --port "$port" --data-dir "$dir" "$@" 2>>"$TMP/server.log" &
    else
        taskset -c "$SERVER_CORE" "$MERIDIAN_BIN" --port "$port" --shards 1 --data-dir "$dir" "$@" 2>>"$TMP/server.log" &
    fi
    PID=$!
    for _ in $(seq 1 400); do
        redis-cli -p "$port" PING >/dev/null 2>&1 && return 0
        kill -0 "$PID" 2>/dev/null || { echo "meridian exited during start-up:" >&2; tail -5 "$TMP/server.log" >&2; exit 1; }
        sleep 0.05
    done
    echo "meridian did not answer PING" >&2; exit 1
}
stop() { kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=""; }
info() { redis-cli -p "$1" INFO persistence | tr -d '\r' | awk -F: -v k="$2" '$1==k {print $2}'; }
rps() { # rps PORT -> SET requests/s, pipeline 16
    taskset -c "$CLIENT_CORE" redis-benchmark -h 127.0.0.1 -p "$1" -t set -n "$REQUESTS" -r 100000000 -c 50 -P 16 -q --csv \
        | awk -F, '/"SET"/ {gsub(/"/,"",$2); print $2}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== SET throughput, persistence off vs on (P=16, $REQUESTS requests, $ROUNDS rounds, one core each)"
off=(); on=()
for round in $(seq 1 "$ROUNDS"); do
    port=$(free_port); start "$TMP/off-$round" "$port" --persistence off; off+=("$(rps "$port")"); stop
    port=$(free_port); start "$TMP/on-$round" "$port"; on+=("$(rps "$port")"); stop
done
off_median=$(printf '%s\n' "${off[@]}" | median); on_median=$(printf '%s\n' "${on[@]}" | median)
printf 'persistence off: %s rps   on: %s rps   ratio on/off: %.3f (target >= 0.95)\n' "$off_median" "$on_median" "$(echo "$on_median / $off_median" | bc -l)"

echo "== segment bytes per write, PUTs per second under load and idle"
port=$(free_port); start "$TMP/load" "$port"
t0=$(date +%s.%N)
rps "$port" >/dev/null
t1=$(date +%s.%N)
sleep 0.6
segments=$(info "$port" segments_written); bytes=$(info "$port" segment_bytes_written); puts_loaded=$(info "$port" store_puts)
printf 'writes: %s  segments: %s  segment bytes: %s  bytes/write: %.1f  PUTs/s under load: %.1f\n' \
    "$REQUESTS" "$segments" "$bytes" "$(echo "$bytes / $REQUESTS" | bc -l)" "$(echo "$segments / ($t1 - $t0)" | bc -l)"
sleep 5
puts_idle=$(info "$port" store_puts)
printf 'PUTs during 5 s idle: %s (%.1f/s)\n' "$((puts_idle - puts_loaded))" "$(echo "($puts_idle - $puts_loaded) / 5" | bc -l)"
stop

echo "== recovery of ~$KEYS keys from the local folder (SIGKILL, restart)"
port=$(free_port); start "$TMP/recovery" "$port" --checkpoint-every-segments 40
taskset -c "$CLIENT_CORE" redis-benchmark -h 127.0.0.1 -p "$port" -t set -n "$KEYS" -r 100000000000 -c 50 -P 64 -q >/dev/null
sleep 0.6
keys=$(redis-cli -p "$port" DBSIZE)
stop
# Recovery reads and decodes on one thread and applies on one thread per shard: first
# as benchmarked above (one core, one shard), then as a node starts by default (every
# core, one shard per core).
for cores in one all; do
    RECOVERY_CORES=$cores start "$TMP/recovery" "$port"
    line=$(grep "recovery complete" "$TMP/server.log" | tail -1)
    printf 'keys: %s, cores: %s (of %s)\n%s\n' "$keys" "$cores" "$(nproc)" "${line#*INFO }"
    [[ "$(redis-cli -p "$port" DBSIZE)" == "$keys" ]] || { echo "recovered key count differs!" >&2; exit 1; }
    stop
done
