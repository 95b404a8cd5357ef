#!/bin/bash
# cpu-per-request.sh: one server's own CPU time per request under a pipelined load, the
# figure to A/B two builds with on a machine whose speed swings (the ratio of two such
# figures moves far less than their rates do).
#
# usage: docker-benchmark/cpu-per-request.sh BIN TEST [meridian flags...]
#   BIN   a Meridian binary, or "redis" for redis-server (no persistence)
#   TEST  set | set-fresh | get | hset | sadd | lpush
# The server is pinned to core 0 (Meridian with --shards 1 and its default persistence to
# a fresh folder), redis-benchmark to core 1. 1M writes fill it first (for get: 1M SETs;
# for set-fresh nothing, so the keyspace grows during the measured run), then 2M of TEST
# at P=16 from 50 clients. Prints the rate and the server's CPU (user + system, all
# threads, /proc ticks) per request in microseconds. Uses port 6400.
BIN=$1; T=$2; shift 2
D=$(mktemp -d)
if [ "$BIN" = redis ]; then taskset -c 0 redis-server --port 6400 --save "" --appendonly no > /dev/null 2>&1 &
else taskset -c 0 $BIN --port 6400 --shards 1 --data-dir $D "$@" > /dev/null 2>&1 & fi
PID=$!
sleep 1.5
case $T in
 set) ARGS="-r 1000000 -d 64 -t set"; FILL="$ARGS";;
 set-fresh) ARGS="-r 1000000 -d 64 -t set"; FILL="";;
 get) ARGS="-r 1000000 -d 64 -t get"; FILL="-r 1000000 -d 64 -t set";;
 hset) ARGS="-r 100000 HSET hash:1 f:__rand_int__ value-16-bytes.."; FILL="$ARGS";;
 sadd) ARGS="-r 100000 SADD set:1 m:__rand_int__"; FILL="$ARGS";;
 lpush) ARGS="-d 16 -t lpush"; FILL="$ARGS";;
esac
[ -n "$FILL" ] && taskset -c 1 redis-benchmark -p 6400 -c 50 -n 1000000 -P 16 $FILL > /dev/null
t0=$(awk '{print $14+$15}' /proc/$PID/stat)
R=$(taskset -c 1 redis-benchmark -p 6400 -c 50 -n 2000000 -P 16 --csv $ARGS | tail -1 | cut -d, -f2 | tr -d '"')
t1=$(awk '{print $14+$15}' /proc/$PID/stat)
echo "$T $(basename $BIN)$* rate $R cpu_us_per_op $(python3 -c "print(round(($t1-$t0)*10000/2000000,3))")"
kill $PID; wait $PID 2>/dev/null
rm -rf $D
