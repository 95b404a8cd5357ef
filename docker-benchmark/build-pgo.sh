#!/usr/bin/env bash
# build-pgo.sh: a profile-guided release build of the `meridian` binary, for
# benchmarking and for images that want the last few per cent (docs/benchmarks.md
# says what it buys). The plain `cargo build --release` stays the supported build; this
# one differs only in code layout and inlining, never in behaviour.
#
#   docker-benchmark/build-pgo.sh            # -> target/pgo/release/meridian
#
# Steps: build an instrumented binary (target/pgo-gen), run it under redis-benchmark's
# mix of the commands the benchmarks measure (strings, counters, hashes, sets, sorted
# sets, lists; pipelined and not), merge the profile with the toolchain's
# llvm-profdata, and build again with it (target/pgo). Needs the rustup component
# llvm-tools (`rustup component add llvm-tools`), redis-benchmark and redis-cli.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly ROOT
readonly PROFILE_DIR="${ROOT}/target/pgo-profiles"
readonly REQUESTS="${PGO_REQUESTS:-200000}"

die() { printf 'build-pgo: %s\n' "$*" >&2; exit 1; }

sysroot="$(rustc --print sysroot)"
profdata="$(find "${sysroot}" -name llvm-profdata -type f | head -n 1)"
[[ -x "${profdata}" ]] || die "llvm-profdata not found: run 'rustup component add llvm-tools'"
command -v redis-benchmark >/dev/null || die "needs redis-benchmark (apt-get install redis-tools)"
command -v redis-cli >/dev/null || die "needs redis-cli (apt-get install redis-tools)"

rm -rf "${PROFILE_DIR}"
mkdir -p "${PROFILE_DIR}"
(cd "${ROOT}" && RUSTFLAGS="-Cprofile-generate=${PROFILE_DIR}" \
    cargo build --release -p meridian --bin meridian --target-dir target/pgo-gen)

data_dir="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
"${ROOT}/target/pgo-gen/release/meridian" --port "${port}" --shards 1 --data-dir "${data_dir}" --log warn &
server=$!
trap 'kill ${server} 2>/dev/null || true; rm -rf "${data_dir}"' EXIT
for _ in $(seq 1 100); do
    redis-cli -p "${port}" PING 2>/dev/null | grep -q PONG && break
    sleep 0.1
done
redis-cli -p "${port}" PING | grep -q PONG || die "instrumented server did not answer PING"

bench() { redis-benchmark -p "${port}" -c 50 -n "${REQUESTS}" -q "$@" >/dev/null; }
for pipeline in 16 1; do
    bench -P "${pipeline}" -t set,get,incr,lpush,rpush,lpop,rpop,lrange_100 -r 1000000 -d 64
    bench -P "${pipeline}" -r 100000 HSET hash:1 f:__rand_int__ value-16-bytes..
    bench -P "${pipeline}" -r 100000 HGET hash:1 f:__rand_int__
    bench -P "${pipeline}" -r 100000 SADD set:1 m:__rand_int__
    bench -P "${pipeline}" -r 100000 SISMEMBER set:1 m:__rand_int__
    bench -P "${pipeline}" -r 100000 ZADD zset:1 __rand_int__ m:__rand_int__
    bench -P "${pipeline}" -r 100000 ZSCORE zset:1 m:__rand_int__
done
# SIGTERM: a clean exit, which is when the instrumented binary writes its profile.
kill -TERM "${server}"
wait "${server}" 2>/dev/null || true

"${profdata}" merge -o "${PROFILE_DIR}/merged.profdata" "${PROFILE_DIR}"
(cd "${ROOT}" && RUSTFLAGS="-Cprofile-use=${PROFILE_DIR}/merged.profdata" \
    cargo build --release -p meridian --bin meridian --target-dir target/pgo)
echo "build-pgo: ${ROOT}/target/pgo/release/meridian"
