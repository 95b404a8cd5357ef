#!/usr/bin/env python3
"""Collection command throughput: Meridian against Debian's redis-server, same machine,
same core budget, same run (DESIGN §10).

Each server is pinned to one core with taskset and redis-benchmark to another, so that
client and server never share one. Rounds alternate redis, meridian, redis, ...; each
round starts a fresh server, runs every test at pipeline 16 and then at pipeline 1
(writes before the reads that need their data), and stops it. The median requests per
second of the rounds is reported per (test, pipeline) with the ratio meridian/redis,
and beside it the server's CPU time per request (user + system, from /proc) with its
ratio: where the client sets the pace, that is the figure that tells the servers apart.
Only ratios from one run mean anything: the machine's load moves absolute numbers.

usage: docker-benchmark/bench-collections.py [--rounds 3] [--requests-p16 500000]
         [--requests-p1 100000] [--keyspace 100000] [--only HSET,ZRANGE] [--meridian BIN]
Exits non-zero when a server fails to start or a benchmark fails; the ratios never fail
the run (targets are read from docs/benchmarks.md, not asserted here).
"""

import argparse
import csv
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import cpu_seconds, start_server, stop
from benchlib import load_average as loadavg


def start(kind, meridian_bin, workdir):
    return start_server(kind, workdir, meridian_bin, core=SERVER_CORE)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER_CORE = os.environ.get("SERVER_CORE", "0")
CLIENT_CORE = os.environ.get("CLIENT_CORE", "1")
CLIENTS = 50
BENCH_TIMEOUT_S = 600

# (name, command): redis-benchmark replaces each __rand_int__ with a random number below
# the keyspace. A write comes before the reads of what it wrote.
TESTS = [
    ("HSET", ["HSET", "bench:hash", "field:__rand_int__", "value-0123456789"]),
    ("HGET", ["HGET", "bench:hash", "field:__rand_int__"]),
    ("SADD", ["SADD", "bench:set", "member:__rand_int__"]),
    ("SISMEMBER", ["SISMEMBER", "bench:set", "member:__rand_int__"]),
    ("ZADD", ["ZADD", "bench:zset", "__rand_int__", "member:__rand_int__"]),
    ("ZSCORE", ["ZSCORE", "bench:zset", "member:__rand_int__"]),
    ("ZRANGE 0 99", ["ZRANGE", "bench:zset", "0", "99"]),
    ("XADD *", ["XADD", "bench:stream", "*", "f", "value-0123456789"]),
    ("XADD MAXLEN ~ 1000", ["XADD", "bench:capped", "MAXLEN", "~", "1000", "*", "f", "value-0123456789"]),
    ("XRANGE - + COUNT 10", ["XRANGE", "bench:stream", "-", "+", "COUNT", "10"]),
    ("XREVRANGE + - COUNT 10", ["XREVRANGE", "bench:stream", "+", "-", "COUNT", "10"]),
]

# The write that fills what a read reads. A read chosen with --only without its write
# gets that write run first, untimed: without it the read would time empty replies.
FILLED_BY = {
    "HGET": "HSET",
    "SISMEMBER": "SADD",
    "ZSCORE": "ZADD",
    "ZRANGE 0 99": "ZADD",
    "XRANGE - + COUNT 10": "XADD *",
    "XREVRANGE + - COUNT 10": "XADD *",
}


def bench(port, command, pipeline, requests, keyspace):
    """Requests per second of one redis-benchmark run."""
    cmd = ["taskset", "-c", CLIENT_CORE, "redis-benchmark", "-p", str(port), "-c", str(CLIENTS), "-n", str(requests),
           "-P", str(pipeline), "-r", str(keyspace), "--csv", *command]
    out = subprocess.run(cmd, capture_output=True, timeout=BENCH_TIMEOUT_S)
    rows = [r for r in csv.reader(io.StringIO(out.stdout.decode())) if r and r[0] != "test"]
    if out.returncode != 0 or not rows:
        sys.exit(f"bench-collections: redis-benchmark failed on {command}: {out.stderr.decode().strip()}")
    return float(rows[0][1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests-p16", type=int, default=500_000)
    parser.add_argument("--requests-p1", type=int, default=100_000)
    parser.add_argument("--keyspace", type=int, default=100_000)
    parser.add_argument("--only", default="")
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target/release/meridian"))
    args = parser.parse_args()
    for tool in ("redis-server", "redis-cli", "redis-benchmark", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"bench-collections: needs {tool} (apt-get install redis-server redis-tools util-linux)")
    if not os.path.exists(args.meridian):
        sys.exit(f"bench-collections: no meridian binary at {args.meridian} (cargo build --release -p meridian)")
    only = [o.strip().upper() for o in args.only.split(",") if o.strip()]
    tests = [t for t in TESTS if not only or any(t[0].startswith(o) for o in only)]
    chosen = {name for name, _ in tests}
    fills = [t for t in TESTS if t[0] not in chosen and any(FILLED_BY.get(name) == t[0] for name in chosen)]
    requests = {16: args.requests_p16, 1: args.requests_p1}
    results = {}  # (server, test, pipeline) -> [rps per round]
    cpu_us = {}  # (server, test, pipeline) -> [server CPU microseconds per request, per round]
    workdir = tempfile.mkdtemp(prefix="bench-collections-")
    print(f"load average before: {loadavg()}; server core {SERVER_CORE}, client core {CLIENT_CORE}; "
          f"{args.rounds} rounds, -c {CLIENTS}, -r {args.keyspace}", flush=True)
    try:
        for round_index in range(args.rounds):
            for server in ("redis", "meridian"):
                proc, port = start(server, args.meridian, workdir)
                try:
                    for _, command in fills:
                        bench(port, command, 16, requests[16], args.keyspace)
                    for pipeline in (16, 1):
                        for name, command in tests:
                            cpu_before = cpu_seconds(proc.pid)
                            rps = bench(port, command, pipeline, requests[pipeline], args.keyspace)
                            cpu = cpu_seconds(proc.pid) - cpu_before
                            results.setdefault((server, name, pipeline), []).append(rps)
                            cpu_us.setdefault((server, name, pipeline), []).append(cpu * 1e6 / requests[pipeline])
                finally:
                    stop(proc)
                print(f"round {round_index + 1} {server} done (load {loadavg()})", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"load average after: {loadavg()}")
    # CPU per request tells the servers apart where the client, not the server, sets
    # the pace (long replies such as ZRANGE 0 99 keep redis-benchmark's core busier
    # than the server's): there the rps ratio says little and this one says which
    # server does the work for less.
    print(f"{'test':<14} {'P':>3} {'redis rps':>12} {'meridian rps':>13} {'meridian/redis':>15} "
          f"{'redis cpu us/req':>17} {'meridian cpu us/req':>20} {'cpu meridian/redis':>19}")
    for pipeline in (16, 1):
        for name, _ in tests:
            redis = statistics.median(results[("redis", name, pipeline)])
            meridian = statistics.median(results[("meridian", name, pipeline)])
            redis_cpu = statistics.median(cpu_us[("redis", name, pipeline)])
            meridian_cpu = statistics.median(cpu_us[("meridian", name, pipeline)])
            print(f"{name:<14} {pipeline:>3} {redis:>12.0f} {meridian:>13.0f} {meridian / redis:>15.2f} "
                  f"{redis_cpu:>17.2f} {meridian_cpu:>20.2f} {meridian_cpu / redis_cpu:>19.2f}")


if __name__ == "__main__":
    main()
