#!/usr/bin/env bash
# Sweep simulator seeds over every fault mix, on every core: the whole system (nodes
# replicate, the default), and one mix of lone nodes (`--no-replicate`).
#
#   dst/sweep.sh [SEEDS_PER_MIX] [FIRST_SEED]      (defaults: 1000, 10000000)
#
# Each mix runs SEEDS_PER_MIX seeds of its own range (mix i: FIRST_SEED + i*SEEDS_PER_MIX
# onwards), so any failure names a seed no other mix ran. Every failing seed is printed
# with the command that replays it exactly; the last lines are one summary per mix and a
# total. Exits non-zero if any seed failed. 100,000 seeds: dst/sweep.sh 16667.
set -euo pipefail
cd "$(dirname "$0")/.."

per_mix=${1:-1000}
first=${2:-10000000}
jobs=${JOBS:-$(nproc)}
extra=${DST_FLAGS:-}   # e.g. DST_FLAGS="--inject-bug lww-tie-break-inverted" (must fail)

# name | dst flags
mixes=(
    "default|"
    "crash-heavy|--faults crash=4,pause=1,clock-jump=2,clock-drift=1,partition=3,slow-link=1"
    "partitions|--faults crash=0,partition=6,link-reset=4,slow-link=2"
    "clocks|--faults clock-jump=6,clock-drift=4,crash=2"
    "flaky-store|--faults crash=3 --store-error-percent 30"
    "pauses-and-resets|--faults pause=6,link-reset=6,crash=1"
    "single-node|--no-replicate"
)

# DST_BIN: a dst binary to use as is (a frozen copy, so that builds during a long sweep
# do not change what later mixes run); otherwise build one.
if [ -n "${DST_BIN:-}" ]; then
    dst=$DST_BIN
else
    cargo build --release -p dst --quiet
    dst=target/release/dst
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

started=$(date +%s)
summaries=()
total_seeds=0
total_failed=0
for i in "${!mixes[@]}"; do
    name=${mixes[$i]%%|*}
    flags=${mixes[$i]#*|}
    start=$((first + i * per_mix))
    end=$((start + per_mix))
    # shellcheck disable=SC2086 # flags and extra are words
    if "$dst" --seeds "$start..$end" --jobs "$jobs" $flags $extra >"$log/$name" 2>&1; then :; fi
    grep -v '^seeds=' "$log/$name" || true
    last=$(grep '^seeds=' "$log/$name" | tail -1)
    if [ -z "$last" ]; then
        echo "mix $name: dst printed no summary:" >&2
        tail -20 "$log/$name" >&2
        exit 2
    fi
    failed=$(sed -E 's/.*failed=([0-9]+).*/\1/' <<<"$last")
    seeds=$(sed -E 's/^seeds=([0-9]+).*/\1/' <<<"$last")
    total_seeds=$((total_seeds + seeds))
    total_failed=$((total_failed + failed))
    summaries+=("$(printf '%-18s seeds %s..%s  %s' "$name" "$start" "$end" "$last")")
done
elapsed=$(($(date +%s) - started))

printf '%s\n' "${summaries[@]}"
echo "total: seeds=$total_seeds mixes=${#mixes[@]} failed=$total_failed seconds=$elapsed jobs=$jobs"
[ "$total_failed" -eq 0 ]
