#!/bin/bash
# Device run (2026-11-28, session 21): idle polling A/B (fan-out latency, vector search),
# then the one-core matrix at P=16 and P=1 (main at the session's start = "base").
set -u
R=$(pwd); B=$R/.devb
cd $B && tar -xJf tools.tar.xz && tar -xJf new.tar.xz && cd $R
# Debian's redis binaries need Debian's libraries (lib/), and only they.
mkdir -p $B/real
for x in redis-server redis-benchmark redis-cli; do
  mv $B/bin/$x $B/real/$x
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/real/%s "$@"\n' $B $B $x > $B/bin/$x; chmod +x $B/bin/$x
done
redis-benchmark --version > $OUT/tools.txt 2>&1; redis-server --version >> $OUT/tools.txt 2>&1
export PATH=$B/bin:$PATH
(nproc; cat /proc/loadavg; grep -m1 "model name" /proc/cpuinfo; lscpu | grep -i "cache\|MHz"; grep -o 'avx512f' /proc/cpuinfo | head -1) > $OUT/machine.txt 2>&1
stopall() { pkill -f redis-stack-server; pkill -f "meridian-(new|base)"; pkill -f "real/redis-server"; sleep 1; }
stopall
# 1. Fan-out latency: DBSIZE visits every shard; PING only the home one. 1 client.
for cfg in "base:0" "new:0" "new:200" "base:0" "new:200"; do
  bin=${cfg%%:*}; poll=${cfg##*:}; extra=""; [ $bin = new ] && extra="--idle-poll-us $poll"
  rm -rf /tmp/pr; mkdir -p /tmp/pr; (cd /tmp/pr && setsid taskset -c 11-15 $B/bin/meridian-$bin --port 6500 --shards 5 --persistence off $extra > log 2>&1 &)
  sleep 1
  for t in DBSIZE PING; do echo "$bin poll=$poll $t $(taskset -c 0 redis-benchmark -p 6500 -c 1 -n 30000 --csv $t | tail -1)"; done >> $OUT/probe.txt
  stopall
done
# 3. One core each: Redis vs Meridian (base) at P=16 and P=1.
cd $R/docker-benchmark
timeout 210 python3 -u bench-matrix.py --verbose --meridian base=$B/bin/meridian-base --pipelines 16,1 --requests-p16 500000 --requests-p1 100000 --rounds 3 > $OUT/matrix.txt 2>&1
echo "exit $?" >> $OUT/matrix.txt; stopall
cd $R
# 2. Vector: RediSearch, Meridian base, Meridian new with polling, on cores 11-15.
rm -rf /tmp/md /tmp/md2 /tmp/rs; mkdir -p /tmp/md /tmp/md2 /tmp/rs
#(cd /tmp/rs && LD_LIBRARY_PATH=$B/rs setsid taskset -c 11-15 $B/rs/redis-stack-server --port 6390 --loadmodule $B/rs/redisearch.so --save '' --appendonly no > /tmp/rs/log 2>&1 &)
(cd /tmp/md && setsid taskset -c 11-15 $B/bin/meridian-base --port 6391 --shards 5 > /tmp/md/log 2>&1 &)
(cd /tmp/md2 && setsid taskset -c 11-15 $B/bin/meridian-new --port 6392 --shards 5 --idle-poll-us 200 > /tmp/md2/log 2>&1 &)
sleep 2
echo "load before: $(cat /proc/loadavg)" > $OUT/vector2.txt
PYTHONUNBUFFERED=1 timeout 110 taskset -c 0-9 $B/bin/vector_load --data $B/data --docs 50000 --queries 1000 --clients 16 --ef 10,15,20,30,40 --meridian-port base=6391 --meridian-port poll200=6392 >> $OUT/vector2.txt 2>&1
echo "exit $? load after: $(cat /proc/loadavg)" >> $OUT/vector2.txt
stopall
# 4. More shards: SET/GET P=16, base, Meridian N shards vs Redis 1 core and io-threads N.
cd $R/docker-benchmark
timeout 100 python3 -u bench-shard-curve.py --meridian $B/bin/meridian-base --cores 1,2,4,8 --rounds 1 --requests 2000000 --csv $OUT/shard-curve.csv --png $OUT/shard-curve.png > $OUT/shard-curve.txt 2>&1
echo "exit $?" >> $OUT/shard-curve.txt; stopall
