#!/usr/bin/env python3
"""geo-points.py [N]: GEOADD commands in RESP for N (default 10,000) points spread evenly
over the one-degree square 13-14 E, 38-39 N (a fixed seed, so every run loads the same
index), for `redis-cli --pipe`. Used by bench-geo.sh and callgrind-per-op.sh's geosearch."""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
r = random.Random(7)
out = sys.stdout
for i in range(n):
    x, y = "%.6f" % (13.0 + r.random()), "%.6f" % (38.0 + r.random())
    m = "p%d" % i
    out.write("*5\r\n$6\r\nGEOADD\r\n$5\r\nmygeo\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(x), x, len(y), y, len(m), m))
