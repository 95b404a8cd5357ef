#!/bin/bash
# usage: perf-set.sh BIN OUT [flags]
BIN=$1; OUT=$2; shift 2
D=$(mktemp -d)
taskset -c 0 $BIN --port 6400 --shards 1 --data-dir $D "$@" > /dev/null 2>&1 &
PID=$!
sleep 1.5
ARGS="-r 1000000 -d 64 -t set"
taskset -c 1 redis-benchmark -p 6400 -c 50 -n 1000000 -P 16 $ARGS > /dev/null
perf record -e cpu-clock -C 0 -o $OUT -- taskset -c 1 redis-benchmark -p 6400 -c 50 -n 2000000 -P 16 --csv $ARGS 2>&1 | tail -1
kill $PID; wait $PID 2>/dev/null; rm -rf $D
