#!/usr/bin/env bash
# smoke.sh: the three-region compose stack, end to end, on a machine with Docker and no
# registry. Builds the images offline (build-offline.sh), starts
# docker-compose.yml + docker-compose.offline.yml under a project of its own, and checks:
#
#   1. a write in region1 is read in region2 and region3; counters from all three sum;
#   2. region3's writes are stored (WAITAOF), then its container is killed and removed
#      and its volume deleted; region1 and region2 take writes meanwhile;
#   3. region3 started again rebuilt itself from the bucket (INFO: recovered segments
#      and deltas, no data loss), caught up from its peers (the writes it missed), and
#      all three regions end with the same keyspace digest;
#   4. a second process started with region3's node id is fenced (exit status 3) when
#      its first segment meets one region3 stored: the S3 stand-in honours conditional
#      writes;
#   5. `down -v` leaves no container, volume or network of the project.
#
# Every wait is bounded; the project is taken down on any exit (trap). The last line
# printed is a one-line summary: `smoke: PASS ...` or `smoke: FAIL ...`.
#
# Environment (all optional):
#   MERIDIAN_BIN      the meridian binary to put in the image; when unset,
#                     `cargo build --release` runs (minutes the first time)
#   PYTHON            a Python with moto[server] (default python3)
#   SMOKE_KEEP=1      leave the stack running after a failure (to look at it)
#   REGION1_PORT..REGION3_PORT   host ports; by default 6379-6381 when all three are
#                     free, otherwise three free ports picked at random
#
# Needs: docker, docker compose (or docker-compose 1.29+), redis-cli, timeout, and a
# Python with moto for the S3 stand-in image. Exit status 0 only when every check passed.

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
readonly PROJECT="meridian-smoke-$$"
readonly INTRUDER="${PROJECT}-intruder"
# Images of this run's own, removed at the end: a smoke run neither replaces the
# meridian:latest a user built nor races another run (another worktree's tests).
export MERIDIAN_IMAGE="meridian:smoke-$$"
export PYTOOLS_IMAGE="meridian-pytools:smoke-$$"
readonly BUILD_TIMEOUT_S=1200
readonly UP_TIMEOUT_S=240
readonly DOWN_TIMEOUT_S=120
readonly COMMAND_TIMEOUT_S=60
readonly READY_TIMEOUT_S=60
readonly REPLICATE_TIMEOUT_S=20
readonly CATCH_UP_TIMEOUT_S=90
readonly REDIS_CLI_TIMEOUT_S=10
readonly WAITAOF_TIMEOUT_MS=10000
readonly POLL_INTERVAL_S=0.2
readonly REGION3_KEYS=200
readonly PORT_PICK_ATTEMPTS_MAX=100

STEP="start"
RESULT=""
STARTED_S="${SECONDS}"
COMPOSE=()

log() { printf '[smoke] %s\n' "$*" >&2; }
fail() { RESULT="FAIL at ${STEP}: $*"; exit 1; }
step() { STEP="$1"; log "== ${STEP} (at $(( SECONDS - STARTED_S )) s)"; }

compose() {
    timeout "${COMMAND_TIMEOUT_S}" "${COMPOSE[@]}" "$@"
}

# Takes the project down whatever happened, then prints the summary line last.
finish() {
    local status=$?
    trap - EXIT INT TERM
    if (( status != 0 )) && [[ -z "${RESULT}" ]]; then
        RESULT="FAIL at ${STEP}: exit status ${status}"
    fi
    if (( ${#COMPOSE[@]} > 0 )); then
        timeout "${COMMAND_TIMEOUT_S}" docker rm -f "${INTRUDER}" >/dev/null 2>&1 || true
        if (( status != 0 )); then
            log "state at the failure:"
            timeout "${COMMAND_TIMEOUT_S}" "${COMPOSE[@]}" ps >&2 || true
            timeout "${COMMAND_TIMEOUT_S}" "${COMPOSE[@]}" logs --no-color --tail 40 >&2 || true
        fi
        if (( status != 0 )) && [[ "${SMOKE_KEEP:-0}" == 1 ]]; then
            log "SMOKE_KEEP=1: project ${PROJECT} left running; remove it with: ${COMPOSE[*]} down -v"
        else
            timeout "${DOWN_TIMEOUT_S}" "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
        fi
    fi
    if ! { (( status != 0 )) && [[ "${SMOKE_KEEP:-0}" == 1 ]]; }; then
        timeout "${COMMAND_TIMEOUT_S}" docker rmi "${MERIDIAN_IMAGE}" "${PYTOOLS_IMAGE}" >/dev/null 2>&1 || true
    fi
    if (( status == 0 )); then
        printf 'smoke: PASS %s (%d s)\n' "${RESULT}" "$(( SECONDS - STARTED_S ))"
    else
        printf 'smoke: %s (%d s)\n' "${RESULT}" "$(( SECONDS - STARTED_S ))"
    fi
    exit "${status}"
}
trap finish EXIT
trap 'RESULT="FAIL at ${STEP}: interrupted"; exit 130' INT TERM

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Sets REGION{1,2,3}_PORT: the caller's, else 6379-6381 when free, else random free ones.
pick_ports() {
    if [[ -n "${REGION1_PORT:-}${REGION2_PORT:-}${REGION3_PORT:-}" ]]; then
        [[ -n "${REGION1_PORT:-}" && -n "${REGION2_PORT:-}" && -n "${REGION3_PORT:-}" ]] \
            || fail "set all of REGION1_PORT REGION2_PORT REGION3_PORT, or none"
        return
    fi
    if ! port_in_use 6379 && ! port_in_use 6380 && ! port_in_use 6381; then
        REGION1_PORT=6379 REGION2_PORT=6380 REGION3_PORT=6381
        return
    fi
    local picked=() attempt port
    for (( attempt = 0; attempt < PORT_PICK_ATTEMPTS_MAX && ${#picked[@]} < 3; attempt++ )); do
        port=$(( 20000 + RANDOM % 10000 ))
        if ! port_in_use "${port}" && [[ " ${picked[*]} " != *" ${port} "* ]]; then picked+=("${port}"); fi
    done
    (( ${#picked[@]} == 3 )) || fail "found no three free ports"
    REGION1_PORT="${picked[0]}" REGION2_PORT="${picked[1]}" REGION3_PORT="${picked[2]}"
}

rcli() {
    local port="$1"; shift
    timeout "${REDIS_CLI_TIMEOUT_S}" redis-cli -h 127.0.0.1 -p "${port}" "$@"
}

# Prints field NAME of `INFO SECTION` on PORT (empty when absent).
info_field() {
    local port="$1" section="$2" name="$3"
    rcli "${port}" INFO "${section}" 2>/dev/null | tr -d '\r' | awk -F: -v name="${name}" '$1 == name { print substr($0, length(name) + 2) }'
}

# Polls until `CHECK ARGS...` succeeds, for at most TIMEOUT_S; fails with WHAT.
wait_for() {
    local timeout_s="$1" what="$2"; shift 2
    local deadline=$(( SECONDS + timeout_s ))
    until "$@"; do
        (( SECONDS < deadline )) || fail "${what} (waited ${timeout_s} s)"
        sleep "${POLL_INTERVAL_S}"
    done
}

answers_ping() { [[ "$(rcli "$1" PING 2>/dev/null)" == PONG ]]; }
value_is() { [[ "$(rcli "$1" GET "$2" 2>/dev/null)" == "$3" ]]; }
peers_up() { [[ "$(info_field "$1" replication peers_up)" == 2 ]]; }
digests_equal() {
    local d1 d2 d3
    d1="$(info_field "${REGION1_PORT}" replication keyspace_digest)"
    d2="$(info_field "${REGION2_PORT}" replication keyspace_digest)"
    d3="$(info_field "${REGION3_PORT}" replication keyspace_digest)"
    [[ -n "${d1}" && "${d1}" == "${d2}" && "${d2}" == "${d3}" ]]
}

preflight() {
    step "preflight"
    command -v docker >/dev/null || fail "docker not found"
    timeout "${COMMAND_TIMEOUT_S}" docker info >/dev/null 2>&1 || fail "docker info failed (is the daemon running, may this user use it?)"
    if timeout "${COMMAND_TIMEOUT_S}" docker compose version >/dev/null 2>&1; then
        COMPOSE=(docker compose)
    elif command -v docker-compose >/dev/null; then
        COMPOSE=(docker-compose)
    else
        fail "neither docker compose nor docker-compose found"
    fi
    command -v redis-cli >/dev/null || fail "redis-cli not found (apt-get install redis-tools)"
    COMPOSE+=(-p "${PROJECT}" -f "${SCRIPT_DIR}/docker-compose.yml" -f "${SCRIPT_DIR}/docker-compose.offline.yml")
    pick_ports
    export REGION1_PORT REGION2_PORT REGION3_PORT
    # The smoke test's own secret; the peer links prove it.
    export MERIDIAN_CLUSTER_SECRET="smoke-secret-$$-${RANDOM}${RANDOM}"
    log "project ${PROJECT}, ports ${REGION1_PORT} ${REGION2_PORT} ${REGION3_PORT}, ${COMPOSE[*]}"
}

build_images() {
    step "build images"
    timeout "${BUILD_TIMEOUT_S}" "${SCRIPT_DIR}/build-offline.sh" meridian pytools || fail "build-offline.sh failed"
}

start_stack() {
    step "up"
    timeout "${UP_TIMEOUT_S}" "${COMPOSE[@]}" up -d --no-build || fail "compose up failed"
    local port
    for port in "${REGION1_PORT}" "${REGION2_PORT}" "${REGION3_PORT}"; do
        wait_for "${READY_TIMEOUT_S}" "no PONG on port ${port}" answers_ping "${port}"
    done
    for port in "${REGION1_PORT}" "${REGION2_PORT}" "${REGION3_PORT}"; do
        wait_for "${READY_TIMEOUT_S}" "port ${port}: peer links not both up" peers_up "${port}"
    done
}

check_replication() {
    step "write in region1, read in region2 and region3"
    local greeting="hello-${RANDOM}${RANDOM}" port
    [[ "$(rcli "${REGION1_PORT}" SET smoke:greeting "${greeting}")" == OK ]] || fail "SET in region1"
    for port in "${REGION2_PORT}" "${REGION3_PORT}"; do
        wait_for "${REPLICATE_TIMEOUT_S}" "region1's write not read on port ${port}" value_is "${port}" smoke:greeting "${greeting}"
    done
    for port in "${REGION1_PORT}" "${REGION2_PORT}" "${REGION3_PORT}"; do
        rcli "${port}" INCR smoke:hits >/dev/null || fail "INCR on port ${port}"
    done
    for port in "${REGION1_PORT}" "${REGION2_PORT}" "${REGION3_PORT}"; do
        wait_for "${REPLICATE_TIMEOUT_S}" "counter not 3 on port ${port}" value_is "${port}" smoke:hits 3
    done
}

lose_region3() {
    step "store region3's writes"
    # One connection: the SETs, then WAITAOF, which answers 1 once they are in a stored
    # segment in the bucket.
    local reply
    reply="$( { for (( i = 1; i <= REGION3_KEYS; i++ )); do printf 'SET smoke:r3:%d v%d\n' "${i}" "${i}"; done
                printf 'WAITAOF 1 0 %d\n' "${WAITAOF_TIMEOUT_MS}"; } | rcli "${REGION3_PORT}" | tail -n 2 | tr '\n' ' ')"
    [[ "${reply}" == "1 0 " ]] || fail "WAITAOF in region3 answered '${reply}', not '1 0'"
    [[ "$(info_field "${REGION3_PORT}" persistence store_errors)" == 0 ]] || fail "region3 reports store errors"

    step "kill region3, delete its container and volume"
    compose kill region3 >/dev/null 2>&1 || fail "compose kill region3"
    compose rm -f region3 >/dev/null 2>&1 || fail "compose rm region3"
    local volume
    volume="$(docker volume ls -q --filter "label=com.docker.compose.project=${PROJECT}" | grep 'region3-data$' || true)"
    [[ -n "${volume}" ]] || fail "no region3-data volume found for project ${PROJECT}"
    timeout "${COMMAND_TIMEOUT_S}" docker volume rm "${volume}" >/dev/null || fail "docker volume rm ${volume}"
    ! docker volume inspect "${volume}" >/dev/null 2>&1 || fail "volume ${volume} still exists"
    ! answers_ping "${REGION3_PORT}" || fail "region3 still answers after kill"

    step "write in region1 and region2 while region3 is gone"
    [[ "$(rcli "${REGION1_PORT}" SET smoke:while-down missed)" == OK ]] || fail "SET in region1"
    rcli "${REGION2_PORT}" INCR smoke:hits >/dev/null || fail "INCR in region2"
}

check_rebuild() {
    step "start region3 again"
    timeout "${UP_TIMEOUT_S}" "${COMPOSE[@]}" up -d --no-build --no-deps region3 || fail "compose up region3"
    wait_for "${READY_TIMEOUT_S}" "region3 did not answer PING after the restart" answers_ping "${REGION3_PORT}"

    step "region3 rebuilt from the bucket"
    # A node answers only after recovery, so INFO already shows what it read.
    local segments deltas parts data_loss
    segments="$(info_field "${REGION3_PORT}" persistence recovered_segments)"
    parts="$(info_field "${REGION3_PORT}" persistence recovered_checkpoint_parts)"
    deltas="$(info_field "${REGION3_PORT}" persistence recovered_deltas)"
    data_loss="$(info_field "${REGION3_PORT}" persistence recovery_data_loss)"
    log "region3 recovered: segments=${segments} checkpoint_parts=${parts} deltas=${deltas}"
    [[ "${segments}" =~ ^[0-9]+$ && "${parts}" =~ ^[0-9]+$ && "${deltas}" =~ ^[0-9]+$ ]] \
        || fail "region3's INFO persistence has no recovery figures"
    (( segments + parts > 0 )) || fail "region3 recovered nothing from the bucket"
    (( deltas >= REGION3_KEYS )) || fail "region3 recovered ${deltas} deltas, fewer than the ${REGION3_KEYS} it stored"
    [[ -z "${data_loss}" ]] || fail "region3 reports recovery data loss: ${data_loss}"

    step "region3 caught up from its peers"
    wait_for "${CATCH_UP_TIMEOUT_S}" "region3 lacks the write made while it was gone" \
        value_is "${REGION3_PORT}" smoke:while-down missed
    local port
    for port in "${REGION1_PORT}" "${REGION2_PORT}" "${REGION3_PORT}"; do
        wait_for "${CATCH_UP_TIMEOUT_S}" "counter not 4 on port ${port}" value_is "${port}" smoke:hits 4
        wait_for "${CATCH_UP_TIMEOUT_S}" "region3's last write missing on port ${port}" \
            value_is "${port}" "smoke:r3:${REGION3_KEYS}" "v${REGION3_KEYS}"
    done
    wait_for "${CATCH_UP_TIMEOUT_S}" "keyspace digests differ between regions" digests_equal
}

intruder_answers() {
    [[ "$(timeout "${REDIS_CLI_TIMEOUT_S}" docker exec "${INTRUDER}" redis-cli PING 2>/dev/null)" == PONG ]]
}

# A second process claiming region3's node id must not overwrite region3's objects: the
# store honours conditional writes (moto does; Garage does not), so whichever of the two
# stores a segment second is fenced (docs/persistence.md). Here region3 stores first.
check_fencing() {
    step "a second process with region3's node id is fenced"
    compose run -d --no-deps --name "${INTRUDER}" region3 \
        --node-id 3 --region intruder --bind 0.0.0.0 --port 6379 --peers "" \
        --object-store "s3://${S3_BUCKET:-meridian}/region3" --data-dir /data >/dev/null \
        || fail "compose run of the second region3 process"
    wait_for "${READY_TIMEOUT_S}" "the second region3 process did not answer PING" intruder_answers
    local reply
    reply="$(printf 'SET smoke:fence region3\nWAITAOF 1 0 %d\n' "${WAITAOF_TIMEOUT_MS}" | rcli "${REGION3_PORT}" | tail -n 2 | tr '\n' ' ')"
    [[ "${reply}" == "1 0 " ]] || fail "region3's WAITAOF answered '${reply}' with a second process started"
    timeout "${REDIS_CLI_TIMEOUT_S}" docker exec "${INTRUDER}" redis-cli SET smoke:fence intruder >/dev/null \
        || fail "SET in the second region3 process"
    local status
    status="$(timeout "${READY_TIMEOUT_S}" docker wait "${INTRUDER}")" \
        || fail "the second region3 process kept running after its segment met region3's"
    [[ "${status}" == 3 ]] || fail "the second region3 process exited with ${status}, not 3 (fenced)"
    docker logs "${INTRUDER}" 2>&1 | grep -q FENCED || fail "the second region3 process did not log FENCED"
    timeout "${COMMAND_TIMEOUT_S}" docker rm -f "${INTRUDER}" >/dev/null 2>&1 || true
    answers_ping "${REGION3_PORT}" || fail "region3 stopped answering"
}

take_down() {
    step "down -v"
    timeout "${DOWN_TIMEOUT_S}" "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || fail "compose down -v"
    local left
    left="$(docker ps -aq --filter "label=com.docker.compose.project=${PROJECT}"; \
            docker volume ls -q --filter "label=com.docker.compose.project=${PROJECT}"; \
            docker network ls -q --filter "label=com.docker.compose.project=${PROJECT}")"
    [[ -z "${left}" ]] || fail "left behind after down -v: ${left//$'\n'/ }"
    COMPOSE=()
}

main() {
    preflight
    build_images
    start_stack
    check_replication
    lose_region3
    check_rebuild
    check_fencing
    take_down
    RESULT="3 regions replicated; region3 rebuilt from the bucket and caught up after losing its container and volume; a second region3 was fenced"
}

main "$@"
