#!/bin/bash
# Device run 2 (2026-11-27): vector with 644ae36 vs RediSearch on equal cores (11-15);
# the shard curve (SET/GET, 2 and 8 shards) for 7a561b8 ("base") and 644ae36 ("new").
set -u
R=$(pwd); B=$R/.devb
cd $B && tar -xJf tools.tar.xz && cd $R
export PATH=$B/bin:$PATH
(nproc; cat /proc/loadavg; grep -m1 "model name" /proc/cpuinfo) > $OUT/machine.txt 2>&1
stopall() { pkill -f redis-stack-server; pkill -f "meridian-(new|base)"; pkill -f "real/redis-server"; sleep 1; }
stopall; rm -rf /tmp/md /tmp/rs; mkdir -p /tmp/md /tmp/rs
(cd /tmp/rs && LD_LIBRARY_PATH=$B/rs setsid taskset -c 11-15 $B/rs/redis-stack-server --port 6390 --loadmodule $B/rs/redisearch.so --save '' --appendonly no > /tmp/rs/log 2>&1 &)
(cd /tmp/md && setsid taskset -c 11-15 $B/bin/meridian-new --port 6391 --shards 5 > /tmp/md/log 2>&1 &)
sleep 2
echo "load before: $(cat /proc/loadavg)" > $OUT/vector.txt
timeout 150 taskset -c 0-9 $B/bin/vector_load --data $B/data --docs 50000 --queries 1000 --clients 16 --meridian-port 6391 --redisearch-port 6390 >> $OUT/vector.txt 2>&1
echo "exit $? load after: $(cat /proc/loadavg)" >> $OUT/vector.txt
stopall
cd $R/docker-benchmark
for b in base new; do
  timeout 75 python3 -u bench-shard-curve.py --meridian $B/bin/meridian-$b --cores 1,2,8 --rounds 2 --requests 2000000 --csv $OUT/shard-$b.csv --png /tmp/x.png > $OUT/shard-$b.txt 2>&1
  echo "exit $?" >> $OUT/shard-$b.txt; stopall
done
