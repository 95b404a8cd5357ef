#!/bin/bash
# usage: tombstone-reads.sh BIN PORT. LRANGE 0 9 and LINDEX 5 (one client, P=1) on a list
# that 200,000 LPOPs left with 200,000 tombstones (two peers configured and down) and 66
# live elements: a read of the live elements should not walk the tombstones.
BIN=$1; PORT=$2
export MERIDIAN_CLUSTER_SECRET=abcdefabcdefabcdef
D=$(mktemp -d)
taskset -c 0 $BIN --port $PORT --data-dir $D --node-id 1 --repl-port 0 --peers 127.0.0.1:7771,127.0.0.1:7772 > $D/log 2>&1 &
PID=$!
sleep 1
redis-benchmark -p $PORT -t rpush -P 16 -c 10 -n 200001 -q > /dev/null 2>&1
redis-benchmark -p $PORT -t lpop -P 16 -c 10 -n 200000 -q > /dev/null 2>&1
for i in $(seq 1 50); do redis-cli -p $PORT rpush mylist x$i > /dev/null; done
echo "$BIN llen $(redis-cli -p $PORT llen mylist)"
redis-benchmark -p $PORT -n 500 -c 1 -q LRANGE mylist 0 9 2>&1 | tr '\r' '\n' | tail -n 1
redis-benchmark -p $PORT -n 500 -c 1 -q LINDEX mylist 5 2>&1 | tr '\r' '\n' | tail -n 1
kill $PID; wait $PID 2>/dev/null; rm -rf $D
