#!/usr/bin/env bash
# maelstrom/run-real.sh WORKLOAD [extra maelstrom test options...]
#
# Runs the Meridian node under the real Maelstrom (Jepsen's; needs Java 11+ and the
# Maelstrom release unpacked somewhere). Maelstrom cannot be fetched in this project's
# environment, so CI runs the local harness instead (maelstrom/check); this script is
# for a machine that has both. Set MAELSTROM_JAR to the jar (lib/maelstrom.jar in the
# release), e.g.
#
#   MAELSTROM_JAR=~/maelstrom/lib/maelstrom.jar maelstrom/run-real.sh g-set
#
# The per-workload options below are the ones maelstrom/README.md documents; anything
# after WORKLOAD is passed on to `maelstrom test` (a later option wins). Maelstrom's
# own verdict is its exit status; its results are under ./store/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -lt 1 ]; then
    echo "usage: maelstrom/run-real.sh g-set|g-counter|pn-counter|broadcast|lin-kv|lin-kv-3 [maelstrom options]" >&2
    exit 2
fi
workload="$1"
shift
jar="${MAELSTROM_JAR:?set MAELSTROM_JAR to the maelstrom.jar of a Maelstrom release}"
command -v java >/dev/null || { echo "java is not installed" >&2; exit 2; }

cargo build --quiet --manifest-path "$root/Cargo.toml" -p maelstrom --release
node="${CARGO_TARGET_DIR:-$root/target}/release/meridian-maelstrom"

# Maelstrom's --bin takes a program without arguments: a wrapper names the workload.
name="$workload"
[ "$workload" = lin-kv-3 ] && name=lin-kv
wrapper="$(mktemp -d)/meridian-$name"
printf '#!/bin/sh\nexec "%s" --workload %s "$@"\n' "$node" "$name" >"$wrapper"
chmod +x "$wrapper"

case "$workload" in
    g-set)      opts=(--node-count 3 --rate 10 --time-limit 20 --nemesis partition) ;;
    g-counter)  opts=(--node-count 3 --rate 100 --time-limit 20 --nemesis partition) ;;
    pn-counter) opts=(--node-count 3 --rate 100 --time-limit 20 --nemesis partition) ;;
    broadcast)  opts=(--node-count 5 --rate 10 --time-limit 20 --nemesis partition) ;;
    # One node: linearizable, Maelstrom passes it.
    lin-kv)     opts=(--node-count 1 --rate 10 --time-limit 10 --concurrency 2n) ;;
    # Three nodes: Maelstrom (Knossos) reports the history not linearizable, as
    # docs/testing.md says it must (eventual consistency).
    lin-kv-3)   opts=(--node-count 3 --rate 10 --time-limit 10 --concurrency 2n --nemesis partition) ;;
    *) echo "unknown workload $workload" >&2; exit 2 ;;
esac
exec java -jar "$jar" test -w "$name" --bin "$wrapper" "${opts[@]}" "$@"
