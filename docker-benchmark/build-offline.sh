#!/usr/bin/env bash
# build-offline.sh: the images docker-compose.yml needs, built from this machine's own
# files, for machines that can reach no Docker registry (no base image can be pulled).
#
# Each image is a folder assembled here (the programs, every shared library `ldd`
# names for them, a few /etc files) turned into an image with `docker import`: nothing
# is downloaded. The images match what docker-benchmark/Dockerfile and the public images
# give users, closely enough for the smoke test and the container benchmark:
#
#   meridian:latest          the release binary and redis-cli (health checks, `exec`)
#   meridian-pytools:latest  this machine's Python with moto's server and what it
#                            imports (the S3 stand-in), the bucket maker and the
#                            delaying proxy (docker-benchmark/tools/)
#   meridian-redis:latest    Debian's redis-server 7 and redis-cli (the benchmark)
#
# Usage: build-offline.sh [meridian] [pytools] [redis]     (default: all three)
#
# Environment (all optional):
#   MERIDIAN_BIN   the meridian binary; when unset, `cargo build --release` runs
#                  (a few minutes the first time) and target/release/meridian is used
#   PYTHON         a Python with moto[server] installed (default: python3)
#   REDIS_SERVER_BIN, REDIS_CLI_BIN   default: redis-server / redis-cli on PATH
#   MERIDIAN_IMAGE, PYTOOLS_IMAGE, REDIS_IMAGE   the tags to give the images (defaults
#                  above; docker-compose.yml reads the first two too)
#
# Exit status non-zero when a program or library is missing or docker fails.

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/.." && pwd)"
readonly SCRIPT_DIR REPO_ROOT
readonly PYTHON="${PYTHON:-python3}"
readonly REDIS_SERVER_BIN="${REDIS_SERVER_BIN:-redis-server}"
readonly REDIS_CLI_BIN="${REDIS_CLI_BIN:-redis-cli}"
readonly IMPORT_TIMEOUT_S=300
readonly MERIDIAN_IMAGE="${MERIDIAN_IMAGE:-meridian:latest}"
readonly PYTOOLS_IMAGE="${PYTOOLS_IMAGE:-meridian-pytools:latest}"
readonly REDIS_IMAGE="${REDIS_IMAGE:-meridian-redis:latest}"
# What the S3 stand-in imports: moto's S3 backend and its HTTP server (moto[server]
# minus the other services).
readonly PYTHON_REQUIREMENTS=('moto[s3]' flask flask-cors)

log() { printf '[build-offline] %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/meridian-images.XXXXXX")"
readonly WORK_DIR
trap 'rm -rf "${WORK_DIR}"' EXIT

# Copies FILE into ROOT at the same path, dereferencing symlinks (the loader opens
# libraries by the name ldd printed, which is often a link).
copy_into() {
    local root="$1" file="$2"
    [[ -e "${file}" ]] || die "missing file ${file}"
    mkdir -p "${root}$(dirname "${file}")"
    cp -L "${file}" "${root}${file}"
}

# The absolute paths of the shared libraries (and the loader) that FILE needs.
libs_of() {
    # `ldd` on a file that is no dynamic executable (a script, a static binary) prints
    # no paths; that is fine.
    ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^[[:space:]]*\/[^ ]+ \(/ { print $1 }'
}

# Copies each named program and every library it needs into ROOT.
add_programs() {
    local root="$1"; shift
    local program lib
    for program in "$@"; do
        copy_into "${root}" "${program}"
        while read -r lib; do
            [[ -n "${lib}" ]] && copy_into "${root}" "${lib}"
        done < <(libs_of "${program}")
    done
}

# Copies the libraries every shared object already under ROOT needs (Python's
# extension modules: ssl, ctypes, the C parts of moto's dependencies).
add_libs_of_shared_objects() {
    local root="$1" object lib
    while read -r object; do
        while read -r lib; do
            [[ -n "${lib}" && ! -e "${root}${lib}" ]] && copy_into "${root}" "${lib}"
        done < <(libs_of "${object}")
    done < <(find "${root}" -type f -name '*.so*')
}

# The minimal /etc and /tmp every image gets. Docker itself mounts resolv.conf,
# hosts and hostname; glibc 2.34+ has the files and dns NSS modules built in.
add_base_files() {
    local root="$1"
    mkdir -p "${root}/etc" "${root}/tmp" "${root}/data"
    chmod 1777 "${root}/tmp"
    printf 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"${root}/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"${root}/etc/group"
    printf 'hosts: files dns\n' >"${root}/etc/nsswitch.conf"
}

# Turns ROOT into image NAME; the remaining arguments are `docker import --change` lines.
import_image() {
    local root="$1" name="$2"; shift 2
    local changes=() change
    for change in "$@"; do changes+=(--change "${change}"); done
    local previous
    previous="$(docker image inspect -f '{{.Id}}' "${name}" 2>/dev/null || true)"
    log "importing ${name} ($(du -sh "${root}" | cut -f1))"
    tar -C "${root}" -c . | timeout "${IMPORT_TIMEOUT_S}" docker import "${changes[@]}" - "${name}" >/dev/null \
        || die "docker import ${name}"
    # The image this tag named before is left untagged; drop it unless a container uses it.
    if [[ -n "${previous}" && "${previous}" != "$(docker image inspect -f '{{.Id}}' "${name}")" ]]; then
        docker rmi "${previous}" >/dev/null 2>&1 || true
    fi
}

build_meridian() {
    local bin="${MERIDIAN_BIN:-}"
    if [[ -z "${bin}" ]]; then
        log "cargo build --release (set MERIDIAN_BIN to skip)"
        (cd "${REPO_ROOT}" && cargo build --release --quiet --bin meridian) || die "cargo build --release"
        bin="${REPO_ROOT}/target/release/meridian"
    fi
    [[ -x "${bin}" ]] || die "no meridian binary at ${bin}"
    local root="${WORK_DIR}/meridian" cli
    cli="$(command -v "${REDIS_CLI_BIN}")" || die "redis-cli not found (apt-get install redis-tools)"
    add_base_files "${root}"
    add_programs "${root}" "${cli}"
    mkdir -p "${root}/usr/local/bin"
    cp -L "${bin}" "${root}/usr/local/bin/meridian"
    while read -r lib; do
        [[ -n "${lib}" && ! -e "${root}${lib}" ]] && copy_into "${root}" "${lib}"
    done < <(libs_of "${bin}")
    if [[ "${cli}" != /usr/local/bin/redis-cli ]]; then ln -s "${cli}" "${root}/usr/local/bin/redis-cli"; fi
    import_image "${root}" "${MERIDIAN_IMAGE}" \
        'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
        'WORKDIR /data' \
        'EXPOSE 6379 7379' \
        'ENTRYPOINT ["/usr/local/bin/meridian"]' \
        'CMD ["--bind", "0.0.0.0", "--data-dir", "/data"]'
}

build_pytools() {
    local root="${WORK_DIR}/pytools" python_exe
    python_exe="$("${PYTHON}" -c 'import os, sys; print(os.path.realpath(sys.executable))')" \
        || die "${PYTHON} does not run"
    "${PYTHON}" -c 'import moto.server' 2>/dev/null || die "${PYTHON} has no moto: pip install 'moto[server]'"
    add_base_files "${root}"
    add_programs "${root}" "${python_exe}"
    # The standard library (without its tests, IDLE and tkinter) and the files of moto's
    # S3 server and every distribution it requires, each at its own path: Python finds
    # them as it does here. Only S3's dependencies: moto[server] would bring every
    # service's (cfn-lint, sympy, docker, ...), four times the size.
    # (Thousands of files: one cp for all of them.)
    "${PYTHON}" "${SCRIPT_DIR}/tools/python_closure.py" "${PYTHON_REQUIREMENTS[@]}" >"${WORK_DIR}/python-files"
    xargs -d '\n' cp -L --parents -t "${root}" <"${WORK_DIR}/python-files" || die "copying Python's files"
    add_libs_of_shared_objects "${root}"
    mkdir -p "${root}/usr/local/bin" "${root}/opt/meridian-tools"
    ln -s "${python_exe}" "${root}/usr/local/bin/python3"
    cp "${SCRIPT_DIR}"/tools/*.py "${root}/opt/meridian-tools/"
    import_image "${root}" "${PYTOOLS_IMAGE}" \
        'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
        'ENV PYTHONDONTWRITEBYTECODE=1' \
        'ENV PYTHONUNBUFFERED=1' \
        'ENTRYPOINT ["/usr/local/bin/python3"]'
}

build_redis() {
    local root="${WORK_DIR}/redis" server cli
    server="$(command -v "${REDIS_SERVER_BIN}")" || die "redis-server not found (apt-get install redis-server)"
    cli="$(command -v "${REDIS_CLI_BIN}")" || die "redis-cli not found (apt-get install redis-tools)"
    add_base_files "${root}"
    # Debian's redis-server is a link to redis-check-rdb, which picks its role from the
    # name it was started by: copy it under the server's name.
    add_programs "${root}" "${server}" "${cli}"
    mkdir -p "${root}/usr/local/bin"
    if [[ "${server}" != /usr/local/bin/redis-server ]]; then ln -s "${server}" "${root}/usr/local/bin/redis-server"; fi
    import_image "${root}" "${REDIS_IMAGE}" \
        'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
        'WORKDIR /data' \
        'EXPOSE 6379' \
        'ENTRYPOINT ["/usr/local/bin/redis-server"]'
}

main() {
    command -v docker >/dev/null || die "docker not found"
    local targets=("$@")
    (( ${#targets[@]} > 0 )) || targets=(meridian pytools redis)
    local target
    for target in "${targets[@]}"; do
        case "${target}" in
            meridian) build_meridian ;;
            pytools) build_pytools ;;
            redis) build_redis ;;
            *) die "unknown image ${target} (meridian, pytools, redis)" ;;
        esac
    done
    log "built: ${targets[*]}"
}

main "$@"
