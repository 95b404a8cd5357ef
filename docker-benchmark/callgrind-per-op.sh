#!/usr/bin/env bash
# callgrind-per-op.sh: instructions the server executes per command, Meridian against
# redis-server, counted by valgrind's callgrind. Instruction counts do not depend on the
# machine's load, so two runs give the same figure (within a fraction of a percent) on a
# busy machine where timings swing by tens of percent.
#
# Method: each server runs under callgrind twice, once taking N1 commands and once N2
# (redis-benchmark with a fixed pipeline depth and one connection); the difference of the
# two totals divided by N2-N1 is the cost of one command, with start-up, connection set-up
# and shutdown cancelled out. Writes go to random keys in a keyspace of KEYSPACE.
#
# Work done on a timer rather than per command is left out, because a server under
# callgrind runs about fifty times slower and would run its timers fifty times as often
# per command: Redis's serverCron and Meridian's memory sampler (jemalloc statistics,
# ten times a second). Meridian's segment flush (every 250 ms) stays in: it is where
# each write's delta is stored, a per-write cost. Shutdown is left out (counting stops
# before the server is stopped, `callgrind_control -i off`): what it frees grows with
# the run, so it does not cancel out (figures before 2026-12-04 include it: for SET
# to random keys, Meridian's keyspace drop added ~190 instructions per command).
#
# Usage: docker-benchmark/callgrind-per-op.sh [TEST ...]      (default: SET GET)
# Environment: MERIDIAN_BIN (default target/release/meridian), PIPELINE (16), CLIENTS (1), N1
# (20000), N2 (60000), KEYSPACE (100000), MERIDIAN_EXTRA_ARGS, KEEP_TMP=1.
# Each TEST is a redis-benchmark -t name (set, get, incr, hset, sadd, zadd, lpush, lpop, ...),
# one of the collection reads hget, sismember, zscore, zrange100 (run against a key the
# matching write test fills first; lpop/rpop also pop from a filled list), `xadd`
# (`XADD mystream * field value-N` into one stream), or
# `geoadd` (GEOADD of a new member at one point into one index), `geosearch` (GEOSEARCH
# of a 5 km radius, nearest 10 with distances, over GEO_POINTS (10,000) points in a
# one-degree square), or
# `publish`: PUBLISH of a 16-byte message to SUBSCRIBERS (default 1) subscribed sockets
# that read everything (bench-lists-pubsub.py's readers; the run fails if one is short),
# so the figure is the cost of one PUBLISH and all its deliveries.
# lrange_100 (_300, _500, _600) reads a preloaded list of LRANGE_PRELOAD (1000)
# elements: the -t form would push into it as many times as it reads.
# CACHE_SIM=1 also simulates the caches and prints last-level data misses per command
# (experimental: see docs/benchmarks.md for why its figures are not usable yet)
# (DLmr + DLmw: a proxy for the memory stalls that instruction counts do not show).
# The simulated last level is 32 MiB, 16-way (LL_CACHE=size,assoc,line overrides it):
# valgrind would otherwise copy the host's, which on a large server holds a whole
# million-key data set and shows no misses at all. CACHE_EVENTS=D1mr,D1mw counts
# first-level data misses instead (any of callgrind's cache events, comma-separated,
# summed).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
MERIDIAN_BIN="${MERIDIAN_BIN:-${REPO_ROOT}/target/release/meridian}"
PIPELINE="${PIPELINE:-16}"
N1="${N1:-20000}"
N2="${N2:-60000}"
KEYSPACE="${KEYSPACE:-100000}"
CLIENTS="${CLIENTS:-1}"
SUBSCRIBERS="${SUBSCRIBERS:-1}"
TESTS=("$@")
[[ ${#TESTS[@]} -gt 0 ]] || TESTS=(set get)

for tool in valgrind redis-server redis-benchmark redis-cli; do
    command -v "$tool" >/dev/null || { echo "callgrind-per-op: '$tool' not found" >&2; exit 1; }
done
[[ -x "$MERIDIAN_BIN" ]] || { echo "callgrind-per-op: no meridian binary at $MERIDIAN_BIN (cargo build --release)" >&2; exit 1; }

TMP="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    if [[ "${KEEP_TMP:-0}" == 1 ]]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# A port no socket uses now (the kernel picks it).
port_of() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Runs one server under callgrind, preloads the keyspace for reads, runs `count`
# commands of `test`, stops the server and prints the total instructions (Ir).
measure() {
    local server="$1" test="$2" count="$3"
    local port out
    port="$(port_of)"
    out="$TMP/$server-$test-$count.out"
    rm -rf "$TMP/data"
    if [[ "$server" == redis ]]; then
        valgrind --tool=callgrind ${CACHE_SIM:+--cache-sim=yes --LL=${LL_CACHE:-33554432,16,64}} --callgrind-out-file="$out" \
            redis-server --port "$port" --save '' --appendonly no >"$TMP/server.log" 2>&1 &
    else
        # shellcheck disable=SC2086
        valgrind --tool=callgrind ${CACHE_SIM:+--cache-sim=yes --LL=${LL_CACHE:-33554432,16,64}} --callgrind-out-file="$out" \
            "$MERIDIAN_BIN" --port "$port" --shards 1 --data-dir "$TMP/data" ${MERIDIAN_EXTRA_ARGS:-} \
            --log warn >"$TMP/server.log" 2>&1 &
    fi
    SERVER_PID=$!
    local tries=0
    until [[ "$(redis-cli -p "$port" ping 2>/dev/null)" == PONG ]]; do
        sleep 0.5
        tries=$((tries + 1))
        ((tries < 240)) || { cat "$TMP/server.log" >&2; echo "server did not start" >&2; exit 1; }
    done
    if [[ "$test" == get ]]; then
        # Reads find what they look for: the keys exist (loaded before measuring, the
        # same amount in both runs, so it cancels out).
        redis-benchmark -p "$port" -t set -n "$KEYSPACE" -r "$KEYSPACE" -P 64 -c 1 -d 64 -q >/dev/null
    elif [[ "$test" == lpop || "$test" == rpop ]]; then
        # Pops take real elements: the list holds more than any run pops (popping an
        # empty list costs a lookup and a nil, not a pop). The same amount in both runs.
        redis-benchmark -p "$port" -t lpush -n "$((N2 + 1000))" -P 64 -c 1 -d 64 -q >/dev/null
    fi
    # Reads of a collection (not redis-benchmark -t tests) run a command of their own
    # against the one key redis-benchmark's hset/sadd/zadd tests fill first.
    local command=()
    case "$test" in
        hget) command=(HGET myhash element:__rand_int__) ;;
        sismember) command=(SISMEMBER myset element:__rand_int__) ;;
        zscore) command=(ZSCORE myzset element:__rand_int__) ;;
        zrange100) command=(ZRANGE myzset 0 99) ;;
        xadd) command=(XADD mystream '*' field value-__rand_int__) ;;
        geoadd) command=(GEOADD mygeo 13.361389 38.115556 member:__rand_int__) ;;
        geosearch) command=(GEOSEARCH mygeo FROMLONLAT 13.5 38.5 BYRADIUS 5 km ASC COUNT 10 WITHDIST) ;;
    esac
    case "$test" in
        hget) redis-benchmark -p "$port" -t hset -n "$KEYSPACE" -r "$KEYSPACE" -P 64 -c 1 -q >/dev/null ;;
        sismember) redis-benchmark -p "$port" -t sadd -n "$KEYSPACE" -r "$KEYSPACE" -P 64 -c 1 -q >/dev/null ;;
        zscore | zrange100) redis-benchmark -p "$port" -n "$KEYSPACE" -r "$KEYSPACE" -P 64 -c 1 -q \
            ZADD myzset __rand_int__ element:__rand_int__ >/dev/null ;;
        # GEO_POINTS (10,000) points spread evenly over one degree square around the
        # search's centre, the same in both runs (geo-points.py: a fixed seed).
        geosearch) python3 "$SCRIPT_DIR/geo-points.py" "${GEO_POINTS:-10000}" | redis-cli -p "$port" --pipe >/dev/null ;;
    esac
    if [[ ${#command[@]} -gt 0 ]]; then
        redis-benchmark -p "$port" -n "$count" -r "$KEYSPACE" -P "$PIPELINE" -c "$CLIENTS" -q "${command[@]}" >/dev/null
    elif [[ "$test" == publish ]]; then
        # bench-lists-pubsub.py's message: channel "bench-channel", 16-byte payload,
        # 60 bytes as delivered to a RESP2 subscriber.
        local expected=$((count * 60)) ready got
        coproc READER { python3 "$SCRIPT_DIR/bench-lists-pubsub.py" --subscriber "$port" "$SUBSCRIBERS" "$expected"; }
        read -r ready <&"${READER[0]}"
        [[ "$ready" == ready ]] || { echo "subscribers did not start: $ready" >&2; exit 1; }
        redis-benchmark -p "$port" -n "$count" -P "$PIPELINE" -c "$CLIENTS" -q PUBLISH bench-channel xxxxxxxxxxxxxxxx >/dev/null
        read -r got <&"${READER[0]}"
        for n in $got; do
            [[ "$n" == "$expected" ]] || { echo "a subscriber read $n of $expected bytes" >&2; exit 1; }
        done
    else
        case "$test" in
            lrange_*)
                # redis-benchmark -t lrange_N first runs as many LPUSHes as LRANGEs into
                # one list (so a difference of two runs would count an LPUSH per LRANGE
                # too). Instead: a list of LRANGE_PRELOAD elements, loaded the same way in
                # both runs so it cancels out, then `count` LRANGEs alone, with
                # redis-benchmark's own ranges (lrange_500 reads 450 elements).
                local last=$((${test#lrange_} - 1))
                [[ "$test" == lrange_500 ]] && last=449
                redis-benchmark -p "$port" -t lpush -n "${LRANGE_PRELOAD:-1000}" -P 64 -c 1 -d 64 -q >/dev/null
                redis-benchmark -p "$port" -n "$count" -P "$PIPELINE" -c "$CLIENTS" -q lrange mylist 0 "$last" >/dev/null
                ;;
            *)
                redis-benchmark -p "$port" -t "$test" -n "$count" -r "$KEYSPACE" -P "$PIPELINE" -c "$CLIENTS" -d 64 -q >/dev/null
                ;;
        esac
    fi
    # Shutdown is not a command's cost: freeing what the run built grows with the run
    # (Meridian drops its keyspace at exit, ~190 instructions per SET'd key; Redis
    # exits without freeing), so it would not cancel out between N1 and N2. Counting
    # stops here for both servers.
    callgrind_control -i off "$SERVER_PID" >/dev/null 2>&1 || echo "callgrind-per-op: could not stop counting before shutdown" >&2
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    # The total of the counted events (Ir, or with CACHE_SIM the last-level data
    # misses DLmr + DLmw) less what the timer-driven functions cost, inclusive, and
    # for Meridian less CommandStats' clock calibration at start (quanta measures the
    # TSC for a wall-clock while, so under callgrind its count differs from run to run:
    # ~50 instructions per command of noise in N2 - N1 before it was left out).
    local events=Ir timers='serverCron'
    [[ -n "${CACHE_SIM:-}" ]] && events="${CACHE_EVENTS:-DLmr,DLmw}"
    [[ "$server" == meridian ]] && timers='meridian::shell::memory::sample_loop|meridian::shell::command_stats::CommandStats::new'
    callgrind_annotate --inclusive=yes --threshold=100 --show="$events" "$out" 2>/dev/null |
        awk -v timers="$timers" '
            BEGIN { ntimers = split(timers, timer, "|") }
            # Leading counts, one per event, each maybe followed by "(12.3%)".
            function sum(    i, n, v) {
                n = 0
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^[0-9,]+$/) { v = $i; gsub(",", "", v); n += v }
                    else if ($i !~ /^\(|%\)$/) break
                }
                return n
            }
            /PROGRAM TOTALS/ { total = sum() }
            {
                for (t = 1; t <= ntimers; t++)
                    if (index($0, timer[t]) && !seen[t]) { periodic += sum(); seen[t] = 1 }
            }
            # %.0f, not %d: mawk (Debian'"'"'s awk) prints any %d past 2^31 - 1 as 2147483647,
            # which turned a long run'"'"'s totals (N2 = 600000) into nonsense per-op figures.
            END { printf "%.0f\n", total - periodic }'
}

unit=Ir
[[ -n "${CACHE_SIM:-}" ]] && unit="$(tr -d ',' <<<"${CACHE_EVENTS:-LLmiss}")"
printf '%-8s %4s %14s %14s %8s\n' test P "redis_$unit/op" "meridian_$unit/op" ratio
for test in "${TESTS[@]}"; do
    declare -A per_op=()
    for server in redis meridian; do
        a="$(measure "$server" "$test" "$N1")"
        b="$(measure "$server" "$test" "$N2")"
        per_op[$server]="$(awk -v a="$a" -v b="$b" -v n=$((N2 - N1)) 'BEGIN { printf "%.2f", (b - a) / n }')"
    done
    ratio="$(awk -v m="${per_op[meridian]}" -v r="${per_op[redis]}" 'BEGIN { printf "%.2f", m / r }')"
    printf '%-8s %4s %14s %14s %8s\n' "$test" "$PIPELINE" "${per_op[redis]}" "${per_op[meridian]}" "$ratio"
done
