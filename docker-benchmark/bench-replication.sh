#!/usr/bin/env bash
# Replication figures for a 3-node cluster on this machine (runs without Docker):
#   - convergence lag p50/p99: a write on node 1 until node 2 and node 3 read it, with
#     every peer link behind a proxy adding 50 ms one way (RTT 100 ms)
#   - replication bytes per write at steady state, against the SET command's own size
#   - SET throughput of node 1 with 2 peers vs with none (ratio, same run)
# Usage: docker-benchmark/bench-replication.sh   (env: SAMPLES=300 REQUESTS=500000 ROUNDS=3 DELAY_MS=50
#        CLIENTS=50 PIPELINE=64 KEYRANGE=100000000 PARTS="lag bytes throughput" MERIDIAN_BIN=...)
# Needs: redis-benchmark and redis-cli (apt-get install redis-tools), python3.
set -euo pipefail
cd "$(dirname "$0")/.."

SAMPLES="${SAMPLES:-300}"
REQUESTS="${REQUESTS:-500000}"
ROUNDS="${ROUNDS:-3}"
PARTS="${PARTS:-lag bytes throughput}"
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-64}"
# redis-benchmark -r: the default makes nearly every SET a new key; 1000000 makes most
# of them overwrites once the keyspace has filled.
KEYRANGE="${KEYRANGE:-100000000}"
DELAY_MS="${DELAY_MS:-50}"
SERVER_CORE="${SERVER_CORE:-0}"
CLIENT_CORE="${CLIENT_CORE:-1}"
if [[ -z "${MERIDIAN_BIN:-}" ]]; then
    cargo build --release --bin meridian >&2
    MERIDIAN_BIN=target/release/meridian
fi
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is required (apt-get install redis-tools)" >&2; exit 1; }
export MERIDIAN_CLUSTER_SECRET="bench-cluster-secret"

TMP="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ping() { for _ in $(seq 1 400); do [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0; sleep 0.05; done; echo "no PING on $1" >&2; exit 1; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rps() { # rps PORT -> SET requests/s, pipeline PIPELINE
    taskset -c "$CLIENT_CORE" redis-benchmark -h 127.0.0.1 -p "$1" -t set -n "$REQUESTS" -r "$KEYRANGE" -c "$CLIENTS" -P "$PIPELINE" -q --csv \
        | awk -F, '/"SET"/ {gsub(/"/,"",$2); print $2}'
}
field() { redis-cli -p "$1" INFO replication | tr -d '\r' | awk -F: -v k="$2" '$1==k {print $2}'; }
peer_field() { # peer_field PORT PEER_INDEX NAME
    redis-cli -p "$1" INFO replication | tr -d '\r' | grep "^peer$2:" | cut -d: -f2- | tr ',' '\n' | awk -F= -v n="$3" '$1==n {print $2}'
}

# A TCP proxy that holds every chunk DELAY_MS before forwarding it (no tc netem here).
cat > "$TMP/proxy.py" <<'PY'
import asyncio, sys
listen, target_port, delay = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000.0
async def pump(reader, writer):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()
    async def forward():
        while True:
            due, data = await queue.get()
            if data is None:
                writer.close(); return
            wait = due - loop.time()
            if wait > 0: await asyncio.sleep(wait)
            writer.write(data); await writer.drain()
    task = asyncio.create_task(forward())
    while True:
        data = await reader.read(65536)
        await queue.put((loop.time() + delay, data if data else None))
        if not data: break
    await task
async def handle(r1, w1):
    try:
        r2, w2 = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        w1.close(); return  # the node behind is not up yet: the dialer retries
    await asyncio.gather(pump(r1, w2), pump(r2, w1), return_exceptions=True)
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server: await server.serve_forever()
asyncio.run(main())
PY

start_cluster() { # start_cluster DELAY_MS -> sets PORTS[1..3]
    local delay="$1"
    declare -gA PORTS REPL
    for i in 1 2 3; do PORTS[$i]=$(free_port); REPL[$i]=$(free_port); done
    for i in 1 2 3; do
        peers=""
        for j in 1 2 3; do
            [[ $i == "$j" ]] && continue
            if [[ "$delay" == 0 ]]; then
                # No delay wanted: link directly (a Python proxy would only burn the cores).
                peers="$peers${peers:+,}127.0.0.1:${REPL[$j]}"
                continue
            fi
            p=$(free_port)
            python3 "$TMP/proxy.py" "$p" "${REPL[$j]}" "$delay" & PIDS+=($!); disown $!
            peers="$peers${peers:+,}127.0.0.1:$p"
        done
        # Node 1 gets SERVER_CORE to itself, as it would have its own machine; its peers
        # share CLIENT_CORE with the client, so they neither take node 1's core nor
        # evict its caches.
        pin="taskset -c $CLIENT_CORE"; [[ $i == 1 ]] && pin="taskset -c $SERVER_CORE"
        $pin "$MERIDIAN_BIN" --node-id "$i" --port "${PORTS[$i]}" --repl-port "${REPL[$i]}" --peers "$peers" \
            --shards 1 --persistence off 2>>"$TMP/node$i.log" & PIDS+=($!); disown $!
        [[ $i == 1 ]] && NODE1_PID=$!
    done
    for i in 1 2 3; do wait_ping "${PORTS[$i]}"; done
    for _ in $(seq 1 200); do [[ "$(field "${PORTS[1]}" peers_up)" == 2 && "$(field "${PORTS[2]}" peers_up)" == 2 && "$(field "${PORTS[3]}" peers_up)" == 2 ]] && return 0; sleep 0.05; done
    echo "cluster links did not come up" >&2; tail -3 "$TMP"/node*.log >&2; exit 1
}
stop_all() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; PIDS=(); sleep 0.2; }

if [[ " $PARTS " == *" lag "* ]]; then
echo "== convergence lag: write on node 1, read on nodes 2 and 3; peer links ${DELAY_MS} ms one way ($SAMPLES samples)"
start_cluster "$DELAY_MS"
python3 - "${PORTS[1]}" "${PORTS[2]}" "${PORTS[3]}" "$SAMPLES" <<'PY'
import socket, sys, time
def conn(port):
    s = socket.create_connection(("127.0.0.1", int(port))); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); return s
def cmd(s, *args):
    out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    s.sendall(out); data = b""
    while not data.endswith(b"\r\n") or (data.startswith(b"$") and data[1:].split(b"\r\n")[0] != b"-1" and data.count(b"\r\n") < 2):
        data += s.recv(65536)
    return data
w, r2, r3 = conn(sys.argv[1]), conn(sys.argv[2]), conn(sys.argv[3])
lags = []
for i in range(int(sys.argv[4])):
    key = b"lag:%d" % i
    cmd(w, b"SET", key, b"x")
    t0 = time.monotonic()
    pending = {2: r2, 3: r3}
    while pending:
        for n, s in list(pending.items()):
            if cmd(s, b"GET", key).startswith(b"$1"):
                lags.append((time.monotonic() - t0) * 1000); del pending[n]
        if time.monotonic() - t0 > 10: raise SystemExit("a write did not arrive in 10 s")
        time.sleep(0.0005)
    time.sleep(0.005)
lags.sort()
p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]
print("lag ms: p50 %.1f  p99 %.1f  max %.1f  (%d reads)" % (p(0.5), p(0.99), lags[-1], len(lags)))
PY
echo "(target: p99 <= RTT + 150 ms = $((2 * DELAY_MS + 150)) ms)"
stop_all

fi

if [[ " $PARTS " == *" bytes "* ]]; then
echo "== replication bytes per write (steady state; 16-byte keys, 3-byte values)"
start_cluster 0
n=200000
taskset -c "$CLIENT_CORE" redis-benchmark -h 127.0.0.1 -p "${PORTS[1]}" -t set -n "$n" -r 100000000 -d 3 -c 50 -P 16 -q >/dev/null
for _ in $(seq 1 100); do [[ "$(peer_field "${PORTS[1]}" 0 backlog_bytes)" == 0 && "$(peer_field "${PORTS[1]}" 1 backlog_bytes)" == 0 ]] && break; sleep 0.1; done
sent=$(( $(peer_field "${PORTS[1]}" 0 bytes_sent) + $(peer_field "${PORTS[1]}" 1 bytes_sent) ))
# The command as the client sent it: *3 $3 SET $16 key:000000123456 $3 xxx.
command_bytes=$(printf '*3\r\n$3\r\nSET\r\n$16\r\nkey:000000123456\r\n$3\r\nxxx\r\n' | wc -c)
per_write=$(echo "$sent / 2 / $n" | bc -l)
printf 'replication bytes per write per peer: %.1f   SET command: %d bytes   ratio: %.2f (target <= 1.5)\n' \
    "$per_write" "$command_bytes" "$(echo "$per_write / $command_bytes" | bc -l)"
stop_all

fi

if [[ " $PARTS " == *" throughput "* ]]; then
echo "== SET throughput of node 1: with 2 peers vs none ($CLIENTS clients, P=$PIPELINE, $REQUESTS requests, $ROUNDS rounds)"
cpu_seconds() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
# measure PORT PID -> "rps cpu_seconds_per_million_writes busy" (node 1's CPU, every
# thread; busy: the share of its core it used while the client ran)
measure() {
    local before after start r; before=$(cpu_seconds "$2"); start=$(date +%s.%N)
    r=$(rps "$1"); after=$(cpu_seconds "$2")
    echo "$r $(echo "($after - $before) * 1000000 / $REQUESTS" | bc -l) $(echo "($after - $before) / ($(date +%s.%N) - $start)" | bc -l)"
}
alone=(); peered=()
solo() { # solo EXTRA_ARGS... -> measure of one pinned node
    local port; port=$(free_port)
    taskset -c "$SERVER_CORE" "$MERIDIAN_BIN" --port "$port" --shards 1 --persistence off "$@" 2>>"$TMP/solo.log" & PIDS+=($!); disown $!
    local pid=$!
    wait_ping "$port"; measure "$port" "$pid"; stop_all >/dev/null
}
for round in $(seq 1 "$ROUNDS"); do
    alone+=("$(solo)")
    start_cluster 0
    peered+=("$(measure "${PORTS[1]}" "$NODE1_PID")"); stop_all
done
col() { cut -d' ' -f"$1" | median; }
a=$(printf '%s\n' "${alone[@]}" | col 1); p=$(printf '%s\n' "${peered[@]}" | col 1)
ac=$(printf '%s\n' "${alone[@]}" | col 2); pc=$(printf '%s\n' "${peered[@]}" | col 2)
ab=$(printf '%s\n' "${alone[@]}" | col 3); pb=$(printf '%s\n' "${peered[@]}" | col 3)
printf 'throughput    no peers: %s rps   2 live peers: %s rps   ratio: %.3f (target >= 0.90)\n' "$a" "$p" "$(echo "$p / $a" | bc -l)"
printf 'node 1 busy   no peers: %.0f%% of its core   2 live peers: %.0f%%\n' "$(echo "$ab * 100" | bc -l)" "$(echo "$pb * 100" | bc -l)"
printf 'node 1 CPU    no peers: %.2f s per 1M writes   2 live peers: %.2f s   ratio alone/peered: %.3f\n' "$ac" "$pc" "$(echo "$ac / $pc" | bc -l)"
echo "(node 1 has SERVER_CORE to itself; its two peers share CLIENT_CORE with the client, so with 2 cores the"
echo " live-peer throughput ratio measures the client starved by the peers' merging as much as replication."
echo " Node 1's CPU per write, every thread counted, is what bounds its throughput when each process has a"
echo " core of its own (a region per machine): that ratio is the one to hold against the target here.)"
fi
