#!/bin/bash
# bench-geo.sh: GEOADD and GEOSEARCH throughput, Meridian or Redis, the server pinned to
# core 0 (Meridian with --shards 1 and its default persistence to a fresh folder, Redis
# without persistence), redis-benchmark (50 clients) on core 1. Run it for both servers,
# alternating, and compare the rates of one run: docs/benchmarks.md, "GEO against Redis".
#
# usage: docker-benchmark/bench-geo.sh BIN|redis
# Loads 10,000 points spread evenly over one degree square (a fixed seed), then:
#   geoadd_p16    1M GEOADDs of random new members at one point into another index, P=16
#   geosearch_p16 100k GEOSEARCH 5 km radius around the square's centre, nearest 10 with
#                 distances, P=16 (about 80 points in the radius)
#   geosearch_p1  the same search at P=1
# Uses port 6402.
BIN=$1; D=$(mktemp -d)
if [ "$BIN" = redis ]; then taskset -c 0 redis-server --port 6402 --save "" --appendonly no >/dev/null 2>&1 &
else taskset -c 0 $BIN --port 6402 --shards 1 --data-dir $D >/dev/null 2>&1 & fi
PID=$!; sleep 1.5
python3 "$(dirname "$0")/geo-points.py" 10000 | redis-cli -p 6402 --pipe >/dev/null
a=$(taskset -c 1 redis-benchmark -p 6402 -c 50 -n 1000000 -P 16 -r 1000000 --csv GEOADD g2 13.361389 38.115556 member:__rand_int__ | tail -1 | cut -d, -f2 | tr -d '"')
s=$(taskset -c 1 redis-benchmark -p 6402 -c 50 -n 100000 -P 16 --csv GEOSEARCH mygeo FROMLONLAT 13.5 38.5 BYRADIUS 5 km ASC COUNT 10 WITHDIST | tail -1 | cut -d, -f2 | tr -d '"')
s1=$(taskset -c 1 redis-benchmark -p 6402 -c 50 -n 100000 -P 1 --csv GEOSEARCH mygeo FROMLONLAT 13.5 38.5 BYRADIUS 5 km ASC COUNT 10 WITHDIST | tail -1 | cut -d, -f2 | tr -d '"')
echo "$(basename $BIN) geoadd_p16 $a geosearch_p16 $s geosearch_p1 $s1"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
