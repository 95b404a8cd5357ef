#!/usr/bin/env bash
# bench-containers.sh: Redis 7 and Meridian, each in a container with the same --cpus,
# --memory and --cpuset-cpus, measured with redis-benchmark in the same run
# (DESIGN §10). The images come from build-offline.sh (no registry needed):
# meridian:latest (the release binary) and meridian-redis:latest (Debian's
# redis-server 7).
#
# Both containers stay up for the whole run; rounds alternate redis, meridian, redis,
# ... for each pipeline depth, and each cell is the median over the rounds. The client
# runs on the host, pinned to CLIENT_CORE, and talks to each container's own address on
# Docker's bridge (no port publishing: no docker-proxy in the path).
#
# Prints the table with meridian/redis ratios and writes every figure to
# RESULTS_CSV (default docker-benchmark/results/bench-containers.csv) for
# plot-bench-containers.py.
#
# Environment (all optional):
#   MERIDIAN_BIN        meridian binary for the image; unset: `cargo build --release`
#   CPUS                --cpus for both containers (default 1)
#   MEMORY              --memory for both containers (default 1g)
#   SERVER_CORE         --cpuset-cpus for both containers (default 0)
#   CLIENT_CORE         core redis-benchmark runs on (default 1)
#   BENCH_ROUNDS        rounds per server (default 3)
#   BENCH_REQUESTS_P16  requests per test at -P 16 (default 1000000)
#   BENCH_REQUESTS_P1   requests per test at -P 1 (default 200000)
#   BENCH_CLIENTS       redis-benchmark -c (default 50)
#   BENCH_KEYSPACE      redis-benchmark -r (default 1000000)
#   BENCH_TIMEOUT_S     limit for one redis-benchmark run (default 600)
#   MERIDIAN_EXTRA_ARGS extra meridian flags (split on spaces)
#   SKIP_BUILD=1        use the images as they are
#
# Exit status 0 when every benchmark produced figures; non-zero when an image, a
# container, a probe or redis-benchmark failed.

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
readonly CPUS="${CPUS:-1}"
readonly MEMORY="${MEMORY:-1g}"
readonly SERVER_CORE="${SERVER_CORE:-0}"
readonly CLIENT_CORE="${CLIENT_CORE:-1}"
readonly BENCH_ROUNDS="${BENCH_ROUNDS:-3}"
readonly BENCH_CLIENTS="${BENCH_CLIENTS:-50}"
readonly BENCH_KEYSPACE="${BENCH_KEYSPACE:-1000000}"
readonly BENCH_TIMEOUT_S="${BENCH_TIMEOUT_S:-600}"
readonly RESULTS_CSV="${RESULTS_CSV:-${SCRIPT_DIR}/results/bench-containers.csv}"
readonly START_TIMEOUT_S=20
readonly COMMAND_TIMEOUT_S=60
readonly BUILD_TIMEOUT_S=1200
readonly POLL_INTERVAL_S=0.2
readonly TESTS=(SET GET)
readonly PIPELINES=(16 1)
declare -A REQUESTS=([16]="${BENCH_REQUESTS_P16:-1000000}" [1]="${BENCH_REQUESTS_P1:-200000}")
readonly SUFFIX="$$"
readonly REDIS_NAME="meridian-bench-redis-${SUFFIX}"
readonly MERIDIAN_NAME="meridian-bench-meridian-${SUFFIX}"

log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

TMP_DIR="$(mktemp -d "${TMPDIR:-/tmp}/meridian-bench-containers.XXXXXX")"
readonly TMP_DIR

cleanup() {
    local status=$?
    local name
    for name in "${REDIS_NAME}" "${MERIDIAN_NAME}"; do
        if (( status != 0 )) && docker inspect "${name}" >/dev/null 2>&1; then
            log "last log lines of ${name}:"; docker logs --tail 20 "${name}" >&2 2>&1 || true
        fi
        timeout "${COMMAND_TIMEOUT_S}" docker rm -f "${name}" >/dev/null 2>&1 || true
    done
    if (( status == 0 )); then rm -rf "${TMP_DIR}"; else log "raw output kept in ${TMP_DIR}"; fi
}
trap cleanup EXIT

container_ip() {
    docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"
}

container_running() {
    [[ "$(docker inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" == true ]]
}

# Starts container NAME from IMAGE with the shared limits; the rest are server arguments.
start_server() {
    local name="$1" image="$2"; shift 2
    # --pull never: the images are local (build-offline.sh); a missing one is an error here,
    # never a download.
    timeout "${COMMAND_TIMEOUT_S}" docker run -d --pull never --name "${name}" \
        --cpus "${CPUS}" --memory "${MEMORY}" --memory-swap "${MEMORY}" --cpuset-cpus "${SERVER_CORE}" \
        "${image}" "$@" >/dev/null || die "docker run ${name}"
    local ip deadline=$(( SECONDS + START_TIMEOUT_S ))
    ip="$(container_ip "${name}")"
    [[ -n "${ip}" ]] || die "${name} has no address"
    until [[ "$(timeout 5 redis-cli -h "${ip}" PING 2>/dev/null)" == PONG ]]; do
        container_running "${name}" || die "${name} exited"
        (( SECONDS < deadline )) || die "${name} did not answer PING within ${START_TIMEOUT_S} s"
        sleep "${POLL_INTERVAL_S}"
    done
    # A server that acknowledges writes without storing them must not post a figure.
    local probe="probe-${RANDOM}"
    [[ "$(redis-cli -h "${ip}" SET bench:probe "${probe}")" == OK ]] || die "${name}: probe SET failed"
    [[ "$(redis-cli -h "${ip}" GET bench:probe)" == "${probe}" ]] || die "${name}: probe GET did not read back"
    printf '%s' "${ip}"
}

# Extracts "<TEST> <rps>" from redis-benchmark --csv output.
parse_csv() {
    awk -F',' '{
        sub(/\r$/, ""); test = $1; rps = $2
        gsub(/"/, "", test); gsub(/"/, "", rps)
        if (tolower(test) == "test" || rps !~ /^[0-9]+(\.[0-9]+)?$/) next
        print toupper(test), rps
    }'
}

# One redis-benchmark run; appends "server,test,pipeline,round,rps" to the raw results.
run_benchmark() {
    local server="$1" name="$2" ip="$3" pipeline="$4" round="$5"
    local out="${TMP_DIR}/${server}-P${pipeline}-r${round}.csv"
    container_running "${name}" || die "${name} is not running (before P=${pipeline}, round ${round})"
    timeout "${BENCH_TIMEOUT_S}" taskset -c "${CLIENT_CORE}" redis-benchmark -h "${ip}" -p 6379 \
        -r "${BENCH_KEYSPACE}" -c "${BENCH_CLIENTS}" -n "${REQUESTS[${pipeline}]}" -P "${pipeline}" \
        -t set,get -q --csv >"${out}" 2>"${out}.err" \
        || { cat "${out}.err" >&2; die "redis-benchmark against ${server} (P=${pipeline}, round ${round}) failed or ran past ${BENCH_TIMEOUT_S} s"; }
    container_running "${name}" || die "${name} died during P=${pipeline}, round ${round}"
    local parsed test rps
    parsed="$(parse_csv <"${out}")"
    for test in "${TESTS[@]}"; do
        rps="$(awk -v t="${test}" '$1 == t { print $2; exit }' <<<"${parsed}")"
        [[ -n "${rps}" ]] || { cat "${out}" >&2; die "no ${test} figure for ${server} P=${pipeline} round ${round}"; }
        awk -v r="${rps}" 'BEGIN { exit !(r > 0) }' || die "${server} ${test} P=${pipeline} round ${round}: rps ${rps}"
        printf '%s,%s,%s,%s,%s\n' "${server}" "${test}" "${pipeline}" "${round}" "${rps}" >>"${TMP_DIR}/raw.csv"
        log "round ${round}/${BENCH_ROUNDS} ${server} ${test} P=${pipeline}: ${rps} rps"
    done
}

median() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit 1
        if (NR % 2) printf "%.0f", v[(NR + 1) / 2]; else printf "%.0f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

cell_median() {
    awk -F, -v s="$1" -v t="$2" -v p="$3" '$1 == s && $2 == t && $3 == p { print $5 }' "${TMP_DIR}/raw.csv" | median
}

main() {
    command -v docker >/dev/null || die "docker not found"
    command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
    if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
        timeout "${BUILD_TIMEOUT_S}" "${SCRIPT_DIR}/build-offline.sh" meridian redis || die "build-offline.sh"
    fi
    local -a meridian_extra=()
    read -r -a meridian_extra <<<"${MERIDIAN_EXTRA_ARGS:-}"
    local redis_ip meridian_ip
    redis_ip="$(start_server "${REDIS_NAME}" meridian-redis:latest \
        --bind 0.0.0.0 --port 6379 --protected-mode no --save '' --appendonly no)"
    meridian_ip="$(start_server "${MERIDIAN_NAME}" meridian:latest \
        --bind 0.0.0.0 --port 6379 --shards 1 --data-dir /data "${meridian_extra[@]}")"
    log "redis at ${redis_ip}, meridian at ${meridian_ip}; each --cpus ${CPUS} --memory ${MEMORY} --cpuset-cpus ${SERVER_CORE}; client on core ${CLIENT_CORE}"
    taskset -pc "${CLIENT_CORE}" $$ >/dev/null 2>&1 || true

    # Anything else running on the machine skews the figures; the load average says how
    # much there was (printed with the table and kept in the CSV).
    local load_before load_after
    load_before="$(cut -d' ' -f1 /proc/loadavg)"
    local round pipeline
    for (( round = 1; round <= BENCH_ROUNDS; round++ )); do
        for pipeline in "${PIPELINES[@]}"; do
            run_benchmark redis "${REDIS_NAME}" "${redis_ip}" "${pipeline}" "${round}"
            run_benchmark meridian "${MERIDIAN_NAME}" "${meridian_ip}" "${pipeline}" "${round}"
        done
    done

    load_after="$(cut -d' ' -f1 /proc/loadavg)"
    mkdir -p "$(dirname "${RESULTS_CSV}")"
    {
        printf '# bench-containers.sh %s: --cpus %s --memory %s --cpuset-cpus %s, client core %s, -c %s -r %s, median of %s rounds, load average %s -> %s (%s cores)\n' \
            "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${CPUS}" "${MEMORY}" "${SERVER_CORE}" "${CLIENT_CORE}" \
            "${BENCH_CLIENTS}" "${BENCH_KEYSPACE}" "${BENCH_ROUNDS}" "${load_before}" "${load_after}" "$(nproc --all)"
        printf 'test,pipeline,redis_rps,meridian_rps,ratio\n'
    } >"${RESULTS_CSV}"
    printf '\n--cpus %s --memory %s --cpuset-cpus %s each; median of %s rounds; load average %s -> %s on %s cores; ratios only compare within this run.\n\n' \
        "${CPUS}" "${MEMORY}" "${SERVER_CORE}" "${BENCH_ROUNDS}" "${load_before}" "${load_after}" "$(nproc --all)"
    printf '%-5s %-8s %14s %14s %16s\n' test pipeline "redis rps" "meridian rps" "meridian/redis"
    printf '%-5s %-8s %14s %14s %16s\n' ----- -------- -------------- -------------- ----------------
    local test redis_rps meridian_rps ratio
    for pipeline in "${PIPELINES[@]}"; do
        for test in "${TESTS[@]}"; do
            redis_rps="$(cell_median redis "${test}" "${pipeline}")" || die "no redis figures for ${test} P=${pipeline}"
            meridian_rps="$(cell_median meridian "${test}" "${pipeline}")" || die "no meridian figures for ${test} P=${pipeline}"
            ratio="$(awk -v m="${meridian_rps}" -v r="${redis_rps}" 'BEGIN { printf "%.2f", m / r }')"
            printf '%-5s %-8s %14s %14s %16s\n' "${test}" "P=${pipeline}" "${redis_rps}" "${meridian_rps}" "${ratio}"
            printf '%s,%s,%s,%s,%s\n' "${test}" "${pipeline}" "${redis_rps}" "${meridian_rps}" "${ratio}" >>"${RESULTS_CSV}"
        done
    done
    printf '\nfigures: %s\n' "${RESULTS_CSV}"
}

main "$@"
