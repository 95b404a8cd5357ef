#!/usr/bin/env bash
# callgrind-vector.sh: instructions the server executes per FT.SEARCH KNN query and per
# vector insert (HSET of a 384-d FLOAT32 vector into an HNSW index), Meridian against
# RediSearch, counted by valgrind's callgrind. Instruction counts do not depend on the
# machine's load, so this is the figure to compare on a busy machine where timings swing.
#
# Method (callgrind-per-op.sh's, by differences): each server runs four times under
# callgrind with instrumentation off (--instr-atstart=no), switched on
# (callgrind_control -i on) only around the measured parts, so loading documents, start
# and stop count nothing. Every run creates the index, loads documents [0, I1), inserts
# [I1, I2) or none of them measured, loads the rest of DOCS, then runs a measured
# batch of queries at the first EF and one at the last EF. The base run inserts none and
# runs Q1 queries in both batches; each other run differs from it in one part (the
# inserts; Q2 queries at the first EF; Q2 at the last), so its difference from the base
# over I2-I1 (or Q2-Q1) is the cost of one operation, connection set-ups cancelled out.
# (One run with dumps between the parts would be quicker, but callgrind's inclusive
# costs, needed to leave the timers out, are wrong across dumps.)
#
# Same index on both: FT.CREATE idx ON HASH PREFIX 1 d: SCHEMA v VECTOR HNSW 10 TYPE
# FLOAT32 DIM 384 DISTANCE_METRIC COSINE M 16 EF_CONSTRUCTION 200. Same data: the
# MiniLM documents of ../shared/data/minilm-docs (bench-vector.py's), widened to f32.
# Queries: "*=>[KNN 10 @v $q EF_RUNTIME ef AS score]" NOCONTENT LIMIT 0 10 DIALECT 2,
# one client, one at a time (a 1-client run of bench-vector.py); the query vectors cycle
# through queries.f16.
#
# Work on a timer is left out, as callgrind-per-op.sh does (a server under callgrind runs
# far slower, so its timers would run that many times as often per operation): the
# inclusive cost of Redis's serverCron and of Meridian's memory sampler is subtracted.
# The rest of the servers' background work counts.
#
# Both servers use what valgrind's CPU offers: AVX2 and FMA, not AVX-512 (RediSearch's
# FP32_InnerProductSIMD16_AVX, Meridian's avx2 kernels).
#
# Usage: docker-benchmark/callgrind-vector.sh
# Slow: each of a server's four runs loads DOCS documents under valgrind, and Meridian
# loaded 4-13 a second on the loaded 2-core VM, so the defaults did not fit a session
# there; docs/vector.md's figures are the quick form
#   DOCS=1000 I1=500 I2=700 Q1=50 Q2=250 docker-benchmark/callgrind-vector.sh
# Environment: MERIDIAN_BIN (target/release/meridian), REDISEARCH_DIR
# (/opt/meridian-peers/redisearch: bin/redis-server, lib/redisearch.so, libssl/ for its
# LD_LIBRARY_PATH), DATA (../shared/data/minilm-docs), DOCS (5000, loaded before the
# queries), Q1 (200), Q2 (600), EFS ("10 40": the first and the last are measured),
# I1 (2000), I2 (4000), SERVERS ("redisearch meridian"), MERIDIAN_EXTRA_ARGS,
# KEEP_TMP=1 (keeps the callgrind outputs for callgrind_annotate).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
MERIDIAN_BIN="${MERIDIAN_BIN:-${REPO_ROOT}/target/release/meridian}"
REDISEARCH_DIR="${REDISEARCH_DIR:-/opt/meridian-peers/redisearch}"
DATA="${DATA:-${REPO_ROOT}/../shared/data/minilm-docs}"
DOCS="${DOCS:-5000}"
Q1="${Q1:-200}"
Q2="${Q2:-600}"
EFS="${EFS:-10 40}"
I1="${I1:-2000}"
I2="${I2:-4000}"
SERVERS="${SERVERS:-redisearch meridian}"

for tool in valgrind callgrind_control callgrind_annotate redis-cli python3; do
    command -v "$tool" >/dev/null || { echo "callgrind-vector: '$tool' not found" >&2; exit 1; }
done
python3 -c 'import numpy, redis' || { echo "callgrind-vector: needs numpy and redis-py" >&2; exit 1; }
[[ -f "$DATA/base.f16" ]] || { echo "callgrind-vector: no data at $DATA" >&2; exit 1; }

TMP="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    if [[ "${KEEP_TMP:-0}" == 1 ]]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# The client: creates the index, loads documents [0, n), runs queries, or inserts
# documents [from, to). Runs outside valgrind; only the server is counted.
cat >"$TMP/client.py" <<'EOF'
import sys
import numpy as np
import redis

DIM = 384
port, action, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]
r = redis.Redis(port=port, protocol=2)
if action == "create":
    r.execute_command("FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "d:", "SCHEMA", "v", "VECTOR", "HNSW", "10",
                      "TYPE", "FLOAT32", "DIM", DIM, "DISTANCE_METRIC", "COSINE", "M", 16, "EF_CONSTRUCTION", 200)
elif action == "insert":
    lo, hi = int(sys.argv[4]), int(sys.argv[5])
    base = np.fromfile(f"{data}/base.f16", "<f2", count=hi * DIM).reshape(-1, DIM).astype(np.float32)
    # One at a time, as a client that waits for each write (a pipeline would amortise
    # the reads and writes of the socket, the same on both servers, but less clearly).
    for i in range(lo, hi):
        r.hset(f"d:{i}", "v", base[i].tobytes())
    info = r.execute_command("FT.INFO", "idx")
    fields = dict(zip(info[::2], info[1::2]))
    assert int(float(fields[b"num_docs"])) == hi, fields[b"num_docs"]
elif action == "query":
    count, ef = int(sys.argv[4]), int(sys.argv[5])
    queries = np.fromfile(f"{data}/queries.f16", "<f2").reshape(-1, DIM).astype(np.float32)
    for i in range(count):
        q = queries[i % len(queries)].tobytes()
        reply = r.execute_command("FT.SEARCH", "idx", f"*=>[KNN 10 @v $q EF_RUNTIME {ef} AS score]", "NOCONTENT",
                                  "LIMIT", "0", "10", "PARAMS", "2", "q", q, "DIALECT", "2")
        assert reply[0] == 10, reply[:2]
EOF

port_of() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run_once SERVER INSERTS QUERIES...: one server process under callgrind with
# instrumentation off; creates the index, loads [0, I1) unmeasured, inserts [I1,
# I1+INSERTS) measured, loads the rest of DOCS unmeasured, then runs each "COUNT@EF"
# of QUERIES measured; stops the server and prints the measured Ir, less the timer
# work inside it (inclusive: valid because nothing is dumped before the end).
run_once() {
    local server="$1" inserts="$2"
    shift 2
    local port out timer='serverCron'
    port="$(port_of)"
    out="$TMP/$server-$inserts-$(tr ' @' '_-' <<<"$*").out"
    rm -rf "$TMP/data"
    local grind=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out")
    if [[ "$server" == redisearch ]]; then
        LD_LIBRARY_PATH="$REDISEARCH_DIR/libssl/usr/lib/x86_64-linux-gnu" "${grind[@]}" \
            "$REDISEARCH_DIR/bin/redis-server" --port "$port" --save '' --appendonly no \
            --loadmodule "$REDISEARCH_DIR/lib/redisearch.so" >"$TMP/server.log" 2>&1 &
    else
        timer='meridian::shell::memory::sample_loop'
        # shellcheck disable=SC2086
        "${grind[@]}" "$MERIDIAN_BIN" --port "$port" --shards 1 --persistence off --data-dir "$TMP/data" \
            ${MERIDIAN_EXTRA_ARGS:-} --log warn >"$TMP/server.log" 2>&1 &
    fi
    SERVER_PID=$!
    local tries=0
    until [[ "$(redis-cli -p "$port" ping 2>/dev/null)" == PONG ]]; do
        sleep 0.5
        tries=$((tries + 1))
        ((tries < 240)) || { cat "$TMP/server.log" >&2; echo "server did not start" >&2; exit 1; }
    done
    local client=(python3 "$TMP/client.py" "$port") on=(callgrind_control -i on "$SERVER_PID") off=(callgrind_control -i off "$SERVER_PID")
    "${client[@]}" create "$DATA"
    "${client[@]}" insert "$DATA" 0 "$I1"
    "${on[@]}" >/dev/null 2>&1
    "${client[@]}" insert "$DATA" "$I1" "$((I1 + inserts))"
    "${off[@]}" >/dev/null 2>&1
    "${client[@]}" insert "$DATA" "$((I1 + inserts))" "$DOCS"
    for q in "$@"; do
        "${on[@]}" >/dev/null 2>&1
        "${client[@]}" query "$DATA" "${q%@*}" "${q#*@}"
        "${off[@]}" >/dev/null 2>&1
    done
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null |
        awk -v timer="$timer" '
            function first(    v) { v = $1; gsub(",", "", v); return v + 0 }
            /PROGRAM TOTALS/ { total = first() }
            index($0, timer) && !seen { periodic = first(); seen = 1 }
            END { printf "%.0f\n", total - periodic }'
}

# measure SERVER: four runs that differ in one measured part each; prints
# "insert IR" and "query EF IR" lines, Ir per operation.
measure() {
    local server="$1" efs=($EFS)
    local first="${efs[0]}" last="${efs[-1]}"
    local base ins q1 q2
    base="$(run_once "$server" 0 "$Q1@$first" "$Q1@$last")"
    ins="$(run_once "$server" "$((I2 - I1))" "$Q1@$first" "$Q1@$last")"
    q1="$(run_once "$server" 0 "$Q2@$first" "$Q1@$last")"
    q2="$(run_once "$server" 0 "$Q1@$first" "$Q2@$last")"
    echo "insert $(per_op "$base" "$ins" $((I2 - I1)))"
    echo "query $first $(per_op "$base" "$q1" $((Q2 - Q1)))"
    echo "query $last $(per_op "$base" "$q2" $((Q2 - Q1)))"
}

per_op() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / n }'; }

declare -A cost=()
for server in $SERVERS; do
    while read -r what a b; do
        if [[ "$what" == insert ]]; then cost[$server,insert]="$a"; else cost[$server,query$a]="$b"; fi
    done < <(measure "$server")
done
row() {
    local label="$1" key="$2" r="${cost[redisearch,$2]:--}" m="${cost[meridian,$2]:--}" ratio=-
    [[ "$r" != - && "$m" != - ]] && ratio="$(awk -v m="$m" -v r="$r" 'BEGIN { printf "%.2f", m / r }')"
    printf '%-26s %16s %16s %8s\n' "$label" "$r" "$m" "$ratio"
}
printf '%-26s %16s %16s %8s\n' "Ir per operation" redisearch meridian ratio
for ef in $EFS; do row "query DOCS=$DOCS EF=$ef" "query$ef"; done
row "insert $I1->$I2" insert
