#!/bin/bash
# usage: tombstone-memory.sh BIN PORT (EXTRA: more server flags). Memory a popped element leaves on a node with two peers down: used_memory and RSS before and after 200,000 LPOPs.
BIN=$1; PORT=$2
export MERIDIAN_CLUSTER_SECRET=abcdefabcdefabcdef
D=$(mktemp -d)
taskset -c 0 $BIN --port $PORT --data-dir $D --node-id 1 --repl-port 0 --peers 127.0.0.1:7771,127.0.0.1:7772 $EXTRA > $D/log 2>&1 &
PID=$!
sleep 1
redis-benchmark -p $PORT -t rpush -P 16 -c 10 -n 200001 -q > /dev/null 2>&1
sleep 0.5
m0=$(redis-cli -p $PORT info memory | grep "^used_memory:" | cut -d: -f2 | tr -d '\r')
r0=$(grep VmRSS /proc/$PID/status | awk '{print $2}')
redis-benchmark -p $PORT -t lpop -P 16 -c 10 -n 200000 -q > /dev/null 2>&1
sleep 0.5
m1=$(redis-cli -p $PORT info memory | grep "^used_memory:" | cut -d: -f2 | tr -d '\r')
r1=$(grep VmRSS /proc/$PID/status | awk '{print $2}')
bl=$(redis-cli -p $PORT info replication | grep -o "backlog_bytes=[0-9]*" | cut -d= -f2 | paste -sd+ | bc)
echo "backlog_bytes(sum)=$bl llen=$(redis-cli -p $PORT llen mylist) used_memory $m0 -> $m1 : $(( (m1-m0)/200000 )) B/pop; rss $r0 -> $r1 kB : $(( (r1-r0)*1024/200000 )) B/pop; memory usage key $(redis-cli -p $PORT memory usage mylist)"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
