#!/usr/bin/env bash
# bench-vs-redis.sh: Meridian against Debian's redis-server, same machine, same core
# budget, same run (DESIGN §10). Runs without Docker.
#
# Each server is pinned to ONE core with taskset; redis-benchmark runs on another core
# so that client and server never share one. Rounds alternate redis, meridian, redis,
# meridian, ... and the median per (server, test, pipeline) is reported as a ratio
# meridian/redis. Only ratios from one run mean anything; see README.md.
#
# Environment (all optional):
#   MERIDIAN_BIN          meridian binary to use; when unset, `cargo build --release`
#                         is run and target/release/meridian is used
#   MERIDIAN_EXTRA_ARGS   extra flags appended to the meridian command line
#   REDIS_SERVER_BIN      default: redis-server on PATH
#   REDIS_BENCHMARK_BIN   default: redis-benchmark on PATH
#   REDIS_CLI_BIN         default: redis-cli on PATH (readiness and sanity probes)
#   SERVER_CORE           core both servers are pinned to (default 0)
#   CLIENT_CORE           core redis-benchmark is pinned to (default 1)
#   BENCH_ROUNDS          rounds per server (default 3)
#   BENCH_REQUESTS_P16    requests per test with -P 16 (default 1000000)
#   BENCH_REQUESTS_P1     requests per test with -P 1 (default 200000)
#   BENCH_CLIENTS         redis-benchmark -c (default 50)
#   BENCH_KEYSPACE        redis-benchmark -r (default 1000000)
#   BENCH_TIMEOUT_S       limit for one redis-benchmark invocation (default 600)
#   START_TIMEOUT_S       limit for a server to answer PING (default 10)
#   KEEP_TMP=1            keep the temporary folder (logs, data-dir, raw CSV)
#
# Exit status: 0 when every benchmark produced numbers, whether or not the targets are
# met (they are reported as PASS/BELOW); non-zero when a server failed to start or a
# benchmark failed.

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
readonly SCRIPT_DIR REPO_ROOT

readonly SERVER_CORE="${SERVER_CORE:-0}"
readonly CLIENT_CORE="${CLIENT_CORE:-1}"
readonly BENCH_ROUNDS="${BENCH_ROUNDS:-3}"
readonly BENCH_REQUESTS_P16="${BENCH_REQUESTS_P16:-1000000}"
readonly BENCH_REQUESTS_P1="${BENCH_REQUESTS_P1:-200000}"
readonly BENCH_CLIENTS="${BENCH_CLIENTS:-50}"
readonly BENCH_KEYSPACE="${BENCH_KEYSPACE:-1000000}"
readonly BENCH_TIMEOUT_S="${BENCH_TIMEOUT_S:-600}"
readonly START_TIMEOUT_S="${START_TIMEOUT_S:-10}"
readonly STOP_TIMEOUT_S=10
readonly START_ATTEMPTS_MAX=3
readonly PORT_PICK_ATTEMPTS_MAX=100
readonly POLL_INTERVAL_S=0.2
readonly REDIS_SERVER_BIN="${REDIS_SERVER_BIN:-redis-server}"
readonly REDIS_BENCHMARK_BIN="${REDIS_BENCHMARK_BIN:-redis-benchmark}"
readonly REDIS_CLI_BIN="${REDIS_CLI_BIN:-redis-cli}"
readonly HOST="127.0.0.1"

# The tests and pipeline depths measured, and the goal ratio (meridian/redis) for each
# pipeline depth. Order here is the order of the table.
readonly TESTS=(SET GET)
readonly PIPELINES=(16 1)
declare -A TARGET_RATIO=([16]=1.5 [1]=1.1)
declare -A REQUESTS=([16]="${BENCH_REQUESTS_P16}" [1]="${BENCH_REQUESTS_P1}")

TMP_DIR=""
REDIS_PID=""
MERIDIAN_PID=""
REDIS_PORT=""
MERIDIAN_PORT=""
LAUNCHED_PID=""
BENCH_PID=""

log() { printf '[bench] %s\n' "$*" >&2; }
die() {
    printf '[bench] ERROR: %s\n' "$*" >&2
    exit 1
}

# Stops one server we started: SIGTERM, wait up to STOP_TIMEOUT_S, then SIGKILL.
stop_server() {
    local pid="$1"
    [[ -n "${pid}" ]] || return 0
    kill -0 "${pid}" 2>/dev/null || return 0
    kill -TERM "${pid}" 2>/dev/null || true
    local waited_ds=0
    while kill -0 "${pid}" 2>/dev/null && ((waited_ds < STOP_TIMEOUT_S * 10)); do
        sleep 0.1
        waited_ds=$((waited_ds + 1))
    done
    if kill -0 "${pid}" 2>/dev/null; then
        log "pid ${pid} ignored SIGTERM for ${STOP_TIMEOUT_S} s; sending SIGKILL"
        kill -KILL "${pid}" 2>/dev/null || true
    fi
    wait "${pid}" 2>/dev/null || true
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_server "${BENCH_PID}"
    stop_server "${REDIS_PID}"
    stop_server "${MERIDIAN_PID}"
    if [[ -n "${TMP_DIR}" && -d "${TMP_DIR}" ]]; then
        if [[ "${KEEP_TMP:-0}" == 1 || ${status} -ne 0 ]]; then
            log "logs and raw output kept in ${TMP_DIR}"
        else
            rm -rf -- "${TMP_DIR}"
        fi
    fi
    exit "${status}"
}

require_uint() {
    local name="$1" value="$2"
    [[ "${value}" =~ ^(0|[1-9][0-9]*)$ ]] || die "${name} must be a non-negative integer, got '${value}'"
}

check_environment() {
    require_uint SERVER_CORE "${SERVER_CORE}"
    require_uint CLIENT_CORE "${CLIENT_CORE}"
    require_uint BENCH_ROUNDS "${BENCH_ROUNDS}"
    require_uint BENCH_REQUESTS_P16 "${BENCH_REQUESTS_P16}"
    require_uint BENCH_REQUESTS_P1 "${BENCH_REQUESTS_P1}"
    require_uint BENCH_CLIENTS "${BENCH_CLIENTS}"
    require_uint BENCH_KEYSPACE "${BENCH_KEYSPACE}"
    require_uint BENCH_TIMEOUT_S "${BENCH_TIMEOUT_S}"
    require_uint START_TIMEOUT_S "${START_TIMEOUT_S}"
    ((BENCH_ROUNDS >= 1)) || die "BENCH_ROUNDS must be at least 1"
    ((BENCH_REQUESTS_P16 >= 1 && BENCH_REQUESTS_P1 >= 1)) || die "request counts must be at least 1"

    local tool
    for tool in "${REDIS_SERVER_BIN}" "${REDIS_BENCHMARK_BIN}" "${REDIS_CLI_BIN}" taskset timeout awk sort; do
        command -v "${tool}" >/dev/null 2>&1 || die "'${tool}' not found (Debian: apt-get install redis-server redis-tools util-linux coreutils)"
    done

    # taskset fails on a core that does not exist; say which one instead.
    local core usable_cores
    usable_cores="$(nproc || true)"
    for core in "${SERVER_CORE}" "${CLIENT_CORE}"; do
        taskset -c "${core}" true 2>/dev/null || die "cannot pin to core ${core} (this machine has ${usable_cores} usable cores)"
    done
    if [[ "${SERVER_CORE}" == "${CLIENT_CORE}" ]]; then
        log "WARNING: SERVER_CORE == CLIENT_CORE == ${SERVER_CORE}: client and server share a core; figures will be skewed"
    fi
}

build_meridian() {
    if [[ -n "${MERIDIAN_BIN:-}" ]]; then
        log "using MERIDIAN_BIN=${MERIDIAN_BIN} (no build)"
    else
        command -v cargo >/dev/null 2>&1 || die "cargo not found; install Rust or set MERIDIAN_BIN"
        log "building meridian (cargo build --release)"
        (cd "${REPO_ROOT}" && cargo build --release --bin meridian) || die "cargo build --release failed"
        MERIDIAN_BIN="${CARGO_TARGET_DIR:-${REPO_ROOT}/target}/release/meridian"
    fi
    [[ -x "${MERIDIAN_BIN}" ]] || die "meridian binary '${MERIDIAN_BIN}' is missing or not executable"
}

# Prints a TCP port on HOST that no socket uses. It is drawn from just below the
# kernel's ephemeral range (ip_local_port_range), because a port inside that range can
# be taken at any moment as the local end of an outgoing connection (redis-benchmark
# alone opens BENCH_CLIENTS of them), which makes the server's bind fail. The port can
# still be taken between this check and the bind; start_server retries on a new port
# when the server says its address is in use.
pick_free_port() {
    local low=32768 high=60999 range_file=/proc/sys/net/ipv4/ip_local_port_range
    if [[ -r "${range_file}" ]]; then
        read -r low high <"${range_file}"
    fi
    local pick_low=10000 pick_high=$((low - 1))
    if ((pick_high - pick_low < 1000)); then
        # The ephemeral range starts too low to leave room below it; use the range.
        pick_low="${low}"
        pick_high="${high}"
    fi
    local have_ss=0
    command -v ss >/dev/null 2>&1 && have_ss=1
    local attempt port in_use
    for ((attempt = 0; attempt < PORT_PICK_ATTEMPTS_MAX; attempt++)); do
        port=$((pick_low + (RANDOM * 32768 + RANDOM) % (pick_high - pick_low + 1)))
        [[ "${port}" == "${REDIS_PORT}" || "${port}" == "${MERIDIAN_PORT}" ]] && continue
        if ((have_ss)); then
            # Any socket in any state with this local port (listening, connected,
            # TIME_WAIT) counts as in use.
            in_use="$(ss -Htan "sport = :${port}" 2>/dev/null || printf 'unknown')"
            [[ -z "${in_use}" ]] || continue
        elif (exec 3<>"/dev/tcp/${HOST}/${port}") 2>/dev/null; then
            continue # something listens there
        fi
        printf '%s\n' "${port}"
        return 0
    done
    die "no free TCP port found on ${HOST} after ${PORT_PICK_ATTEMPTS_MAX} attempts"
}

# Prints "ready" once the server answers PING, "exited" if its process ends first, or
# "timeout" after START_TIMEOUT_S.
wait_for_server() {
    local pid="$1" port="$2"
    local reply now_us deadline_us
    # EPOCHREALTIME (bash 5) is seconds.microseconds; strip the separator, whatever
    # the locale makes it, to get microseconds.
    now_us="${EPOCHREALTIME//[!0-9]/}"
    deadline_us=$((now_us + START_TIMEOUT_S * 1000000))
    while ((now_us < deadline_us)); do
        if ! kill -0 "${pid}" 2>/dev/null; then
            printf 'exited\n'
            return 0
        fi
        reply="$(timeout 2 "${REDIS_CLI_BIN}" -h "${HOST}" -p "${port}" PING 2>/dev/null || true)"
        if [[ "${reply}" == "PONG" ]]; then
            printf 'ready\n'
            return 0
        fi
        sleep 0.1
        now_us="${EPOCHREALTIME//[!0-9]/}"
    done
    printf 'timeout\n'
}

# A server that acknowledges writes without storing them would post fine numbers, so
# check a write reads back before measuring anything.
sanity_check() {
    local name="$1" port="$2"
    local key="bench-vs-redis:probe:$$" value="probe-${RANDOM}${RANDOM}" reply
    reply="$(timeout 5 "${REDIS_CLI_BIN}" -h "${HOST}" -p "${port}" SET "${key}" "${value}" 2>&1 || true)"
    [[ "${reply}" == "OK" ]] || die "${name}: SET probe answered '${reply}', expected OK"
    reply="$(timeout 5 "${REDIS_CLI_BIN}" -h "${HOST}" -p "${port}" GET "${key}" 2>&1 || true)"
    [[ "${reply}" == "${value}" ]] || die "${name}: GET probe answered '${reply}', expected '${value}'"
}

# Launchers: start one server in the background on port $1, output to $2, and leave
# its pid in LAUNCHED_PID. taskset execs the server, so that pid is the server's own.
launch_redis() {
    local port="$1" log_file="$2" dir="${TMP_DIR}/redis"
    mkdir -p "${dir}"
    taskset -c "${SERVER_CORE}" "${REDIS_SERVER_BIN}" \
        --bind "${HOST}" --port "${port}" \
        --save "" --appendonly no \
        --dir "${dir}" --daemonize no \
        >"${log_file}" 2>&1 &
    LAUNCHED_PID=$!
}

launch_meridian() {
    local port="$1" log_file="$2" dir="${TMP_DIR}/meridian-data"
    # A fresh data-dir per attempt: a failed attempt must not leave state behind.
    rm -rf -- "${dir}"
    mkdir -p "${dir}"
    local -a extra_args=()
    if [[ -n "${MERIDIAN_EXTRA_ARGS:-}" ]]; then
        # Word splitting is the point here: the variable holds several flags.
        read -r -a extra_args <<<"${MERIDIAN_EXTRA_ARGS}"
    fi
    taskset -c "${SERVER_CORE}" "${MERIDIAN_BIN}" \
        --shards 1 --port "${port}" --data-dir "${dir}" \
        "${extra_args[@]}" \
        >"${log_file}" 2>&1 &
    LAUNCHED_PID=$!
}

# Starts server $1 with launcher $2, recording its pid and port in the variables named
# $3 and $4 (the pid as soon as it exists, so that cleanup can stop it), then checks
# that it answers and stores data. Dies loudly if it never comes up.
start_server() {
    local name="$1" launcher="$2" pid_var="$3" port_var="$4"
    local log_file="${TMP_DIR}/${name}.log"
    local attempt port pid state
    for ((attempt = 1; attempt <= START_ATTEMPTS_MAX; attempt++)); do
        port="$(pick_free_port)"
        "${launcher}" "${port}" "${log_file}"
        pid="${LAUNCHED_PID}"
        printf -v "${pid_var}" '%s' "${pid}"
        state="$(wait_for_server "${pid}" "${port}")"
        case "${state}" in
            ready)
                printf -v "${port_var}" '%s' "${port}"
                sanity_check "${name}" "${port}"
                log "${name} up: pid ${pid}, port ${port}, core ${SERVER_CORE}"
                return 0
                ;;
            exited)
                wait "${pid}" 2>/dev/null || true
                printf -v "${pid_var}" '%s' ""
                if grep -qi 'in use' "${log_file}" && ((attempt < START_ATTEMPTS_MAX)); then
                    log "${name}: port ${port} was taken before it could bind; retrying on another port"
                    continue
                fi
                tail -n 20 "${log_file}" >&2 || true
                die "${name} exited during start-up (log above: ${log_file})"
                ;;
            *)
                tail -n 20 "${log_file}" >&2 || true
                die "${name} did not answer PING on ${HOST}:${port} within ${START_TIMEOUT_S} s (log above: ${log_file})"
                ;;
        esac
    done
    die "${name} could not start after ${START_ATTEMPTS_MAX} attempts"
}

# Extracts "<TEST> <rps>" lines from redis-benchmark --csv output on stdin. Tolerates
# the header line, quoting, CRLF and extra columns; prints nothing for junk.
parse_csv() {
    awk -F',' '
        {
            sub(/\r$/, "")
            test = $1; rps = $2
            gsub(/"/, "", test); gsub(/"/, "", rps)
            gsub(/^[ \t]+|[ \t]+$/, "", test); gsub(/^[ \t]+|[ \t]+$/, "", rps)
            if (tolower(test) == "test") next          # header line
            if (rps !~ /^[0-9]+(\.[0-9]+)?$/) next
            print toupper(test), rps
        }'
}

# Runs redis-benchmark once against one server at one pipeline depth and appends
# "<server> <test> <pipeline> <round> <rps>" to the results file.
run_benchmark() {
    local server="$1" port="$2" pid="$3" pipeline="$4" round="$5"
    local requests="${REQUESTS[${pipeline}]}"
    local tag="${server}-P${pipeline}-r${round}"
    local out="${TMP_DIR}/${tag}.csv" err="${TMP_DIR}/${tag}.err"
    local tests_arg
    tests_arg="$(IFS=,; printf '%s' "${TESTS[*]}" | tr '[:upper:]' '[:lower:]')"

    kill -0 "${pid}" 2>/dev/null || die "${server} (pid ${pid}) is no longer running (before P=${pipeline}, round ${round})"

    # redis-benchmark retries forever against a server that went away, so run it in
    # the background and watch the server; BENCH_TIMEOUT_S bounds it regardless.
    timeout "${BENCH_TIMEOUT_S}" taskset -c "${CLIENT_CORE}" "${REDIS_BENCHMARK_BIN}" \
        -h "${HOST}" -p "${port}" \
        -r "${BENCH_KEYSPACE}" -c "${BENCH_CLIENTS}" -n "${requests}" -P "${pipeline}" \
        -t "${tests_arg}" -q --csv \
        >"${out}" 2>"${err}" &
    BENCH_PID=$!
    while kill -0 "${BENCH_PID}" 2>/dev/null; do
        if ! kill -0 "${pid}" 2>/dev/null; then
            stop_server "${BENCH_PID}"
            BENCH_PID=""
            cat "${err}" >&2 || true
            die "${server} (pid ${pid}) died during the benchmark (P=${pipeline}, round ${round}); log: ${TMP_DIR}/${server}.log"
        fi
        sleep "${POLL_INTERVAL_S}"
    done
    local status=0
    wait "${BENCH_PID}" || status=$?
    BENCH_PID=""
    if ((status != 0)); then
        cat "${err}" >&2 || true
        ((status == 124)) && die "redis-benchmark against ${server} (P=${pipeline}, round ${round}) ran past ${BENCH_TIMEOUT_S} s"
        die "redis-benchmark against ${server} (P=${pipeline}, round ${round}) exited with status ${status}"
    fi
    [[ -s "${out}" ]] || {
        cat "${err}" >&2 || true
        die "redis-benchmark against ${server} (P=${pipeline}, round ${round}) printed nothing"
    }
    kill -0 "${pid}" 2>/dev/null || die "${server} (pid ${pid}) died during the benchmark (P=${pipeline}, round ${round}); log: ${TMP_DIR}/${server}.log"

    local parsed test rps line
    parsed="$(parse_csv <"${out}")"
    for test in "${TESTS[@]}"; do
        line="$(awk -v t="${test}" '$1 == t { print $2; exit }' <<<"${parsed}")"
        [[ -n "${line}" ]] || {
            cat "${out}" >&2
            die "no ${test} figure in redis-benchmark output for ${server} (P=${pipeline}, round ${round}); raw output above"
        }
        rps="${line}"
        awk -v r="${rps}" 'BEGIN { exit !(r > 0) }' || die "${server} ${test} P=${pipeline} round ${round}: rps is ${rps}"
        printf '%s %s %s %s %s\n' "${server}" "${test}" "${pipeline}" "${round}" "${rps}" >>"${TMP_DIR}/results.txt"
        log "round ${round}/${BENCH_ROUNDS} ${server} ${test} P=${pipeline}: ${rps} rps"
    done
}

# Prints the median rps of (server, test, pipeline) from the results file.
median_rps() {
    local server="$1" test="$2" pipeline="$3"
    awk -v s="${server}" -v t="${test}" -v p="${pipeline}" \
        '$1 == s && $2 == t && $3 == p { print $5 }' "${TMP_DIR}/results.txt" |
        sort -g |
        awk '{ v[NR] = $1 }
             END {
                 if (NR == 0) { print "[bench] ERROR: no figures for this cell" > "/dev/stderr"; exit 1 }
                 if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]
                 else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
             }'
}

report() {
    local test pipeline redis_rps meridian_rps ratio
    local -a target_lines=()
    printf '\n'
    printf 'Meridian vs Redis: one core per server (core %s), redis-benchmark on core %s,\n' "${SERVER_CORE}" "${CLIENT_CORE}"
    printf '%s clients, keyspace %s, median of %s rounds; ratios only compare within this run.\n\n' \
        "${BENCH_CLIENTS}" "${BENCH_KEYSPACE}" "${BENCH_ROUNDS}"
    printf '%-5s %-9s %14s %14s %16s\n' test pipeline 'redis rps' 'meridian rps' 'meridian/redis'
    printf '%-5s %-9s %14s %14s %16s\n' ----- -------- -------------- -------------- --------------
    for pipeline in "${PIPELINES[@]}"; do
        for test in "${TESTS[@]}"; do
            # median_rps fails (and set -e stops the script) when a cell has no figures;
            # run_benchmark has already refused to go on without them, so this is a backstop.
            redis_rps="$(median_rps redis "${test}" "${pipeline}")"
            meridian_rps="$(median_rps meridian "${test}" "${pipeline}")"
            ratio="$(awk -v m="${meridian_rps}" -v r="${redis_rps}" 'BEGIN { printf "%.2f", m / r }')"
            printf '%-5s %-9s %14.0f %14.0f %16s\n' "${test}" "P=${pipeline}" "${redis_rps}" "${meridian_rps}" "${ratio}"
            # Compared at the two decimals shown, so that the verdict matches the table.
            local goal="${TARGET_RATIO[${pipeline}]}" verdict
            if awk -v x="${ratio}" -v g="${goal}" 'BEGIN { exit !(x >= g) }'; then
                verdict=PASS
            else
                verdict=BELOW
            fi
            target_lines+=("$(printf 'target %s P=%s >= %sx: ratio %s %s' "${test}" "${pipeline}" "${goal}" "${ratio}" "${verdict}")")
        done
    done
    printf '\n'
    printf '%s\n' "${target_lines[@]}"
}

main() {
    check_environment
    build_meridian

    # From here on the script itself (its polling, redis-cli probes) stays on the client
    # core, off the servers' core. Not before the build: cargo wants every core.
    taskset -pc "${CLIENT_CORE}" "$$" >/dev/null || die "cannot pin this script to core ${CLIENT_CORE}"

    TMP_DIR="$(mktemp -d "${TMPDIR:-/tmp}/meridian-bench.XXXXXX")"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    : >"${TMP_DIR}/results.txt"

    local version
    version="$("${REDIS_SERVER_BIN}" --version || true)"
    log "redis: ${version%%$'\n'*}"
    log "meridian: ${MERIDIAN_BIN}"
    start_server redis launch_redis REDIS_PID REDIS_PORT
    start_server meridian launch_meridian MERIDIAN_PID MERIDIAN_PORT

    local round pipeline
    for ((round = 1; round <= BENCH_ROUNDS; round++)); do
        for pipeline in "${PIPELINES[@]}"; do
            run_benchmark redis "${REDIS_PORT}" "${REDIS_PID}" "${pipeline}" "${round}"
            run_benchmark meridian "${MERIDIAN_PORT}" "${MERIDIAN_PID}" "${pipeline}" "${round}"
        done
    done

    report
}

main "$@"
