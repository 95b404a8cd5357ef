#!/bin/bash
# cpu-per-request.sh: one server's own CPU time per request under a pipelined load, the
# figure to A/B two builds with on a machine whose speed swings (the ratio of two such
# figures moves far less than their rates do), and to compare Meridian with Redis where
# a throughput ratio only measures the client (redis-benchmark saturating its core).
#
# usage: [PIPELINE=16] [N=2000000] docker-benchmark/cpu-per-request.sh BIN TEST [meridian flags...]
#   BIN   a Meridian binary, or "redis" for redis-server (no persistence)
#   TEST  set | set-fresh | get | hset | hget | sadd | sismember | zadd | zscore |
#         zrange100 | lpush | rpush | lpop | rpop | lrange_100 | xadd
# The server is pinned to core 0 (Meridian with --shards 1 and its default persistence to
# a fresh folder), redis-benchmark to core 1. 1M writes fill it first (for get: 1M SETs;
# for hget, sismember, zscore and zrange100 the collection the write test fills; for the
# pops N + 1,000 pushes, so that every pop takes an element; for set-fresh nothing, so
# the keyspace grows during the measured run), then N (default 2M) of TEST at pipeline
# depth PIPELINE (default 16) from 50 clients. Prints the rate and the server's CPU
# (user + system, all threads, /proc ticks) per request in microseconds, then its user
# and system parts. Uses port 6400.
BIN=$1; T=$2; shift 2
# Test arguments go unquoted to redis-benchmark: no file-name expansion (XADD's `*`).
set -f
D=$(mktemp -d)
if [ "$BIN" = redis ]; then taskset -c 0 redis-server --port 6400 --save "" --appendonly no > /dev/null 2>&1 &
else taskset -c 0 $BIN --port 6400 --shards 1 --data-dir $D "$@" > /dev/null 2>&1 & fi
PID=$!
sleep 1.5
P=${PIPELINE:-16}; N=${N:-2000000}; FILL_N=1000000
case $T in
 set) ARGS="-r 1000000 -d 64 -t set"; FILL="$ARGS";;
 set-fresh) ARGS="-r 1000000 -d 64 -t set"; FILL="";;
 get) ARGS="-r 1000000 -d 64 -t get"; FILL="-r 1000000 -d 64 -t set";;
 hset) ARGS="-r 100000 HSET hash:1 f:__rand_int__ value-16-bytes.."; FILL="$ARGS";;
 hget) ARGS="-r 100000 HGET hash:1 f:__rand_int__"; FILL="-r 100000 HSET hash:1 f:__rand_int__ value-16-bytes..";;
 sadd) ARGS="-r 100000 SADD set:1 m:__rand_int__"; FILL="$ARGS";;
 sismember) ARGS="-r 100000 SISMEMBER set:1 m:__rand_int__"; FILL="-r 100000 SADD set:1 m:__rand_int__";;
 zadd) ARGS="-r 100000 ZADD zset:1 __rand_int__ m:__rand_int__"; FILL="$ARGS";;
 zscore) ARGS="-r 100000 ZSCORE zset:1 m:__rand_int__"; FILL="-r 100000 ZADD zset:1 __rand_int__ m:__rand_int__";;
 zrange100) ARGS="ZRANGE zset:1 0 99"; FILL="-r 100000 ZADD zset:1 __rand_int__ m:__rand_int__";;
 lpush | rpush) ARGS="-d 16 -t $T"; FILL="$ARGS";;
 lpop | rpop) ARGS="-t $T"; FILL="-d 16 -t lpush"; FILL_N=$((N + 1000));;
 lrange_100) ARGS="LRANGE mylist 0 99"; FILL="-d 16 -t lpush";;
 xadd) ARGS="XADD mystream * field value-__rand_int__"; FILL="$ARGS";;
 *) echo "unknown test $T" >&2; kill $PID; wait $PID 2>/dev/null; rm -rf $D; exit 2;;
esac
[ -n "$FILL" ] && taskset -c 1 redis-benchmark -p 6400 -c 50 -n $FILL_N -P 16 $FILL > /dev/null
read -r u0 s0 < <(awk '{print $14, $15}' /proc/$PID/stat)
R=$(taskset -c 1 redis-benchmark -p 6400 -c 50 -n $N -P $P --csv $ARGS | tail -1 | cut -d, -f2 | tr -d '"')
read -r u1 s1 < <(awk '{print $14, $15}' /proc/$PID/stat)
per_op() { python3 -c "print(round(($1)*1e6/$(getconf CLK_TCK)/$N,3))"; }
echo "$T P=$P $(basename $BIN)$* rate $R cpu_us_per_op $(per_op "$u1+$s1-$u0-$s0") user $(per_op "$u1-$u0") sys $(per_op "$s1-$s0")"
kill $PID; wait $PID 2>/dev/null
rm -rf $D
