#!/usr/bin/env python3
"""Throughput against pipeline depth, Meridian against redis-server in the same run.

Each server is pinned to one core (taskset), redis-benchmark to another, so client
and server never share a core. For every pipeline depth and test, rounds alternate
Redis, Meridian, Redis, Meridian, ... and the median of each is kept; the ratio
Meridian / Redis is printed per depth. Only ratios from one run mean anything: the
absolute figures move with the machine's load.

Writes a CSV and a chart (PNG) of requests per second against pipeline depth.

Usage:
  docker-benchmark/bench-pipeline-curve.py [--tests set,get] [--depths 1,2,4,8,16,32,64]
      [--rounds 3] [--requests 300000] [--clients 50] [--keyspace 1000000]
      [--meridian target/release/meridian] [--meridian-args "--shards 1"]
      [--csv docker-benchmark/results/pipeline-curve.csv]
      [--png docker-benchmark/results/pipeline-curve.png]

Needs redis-server, redis-benchmark, redis-cli and taskset on PATH, and matplotlib
for the chart (pip install matplotlib; without it the CSV and table are still written).
"""

import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import load_average, start_server, stop

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
BENCH_TIMEOUT_S = 600


def bench(port, test, depth, args):
    """Requests per second of one redis-benchmark run."""
    command = [
        "taskset", "-c", str(args.client_core), "redis-benchmark", "-p", str(port), "-t", test,
        "-n", str(args.requests), "-r", str(args.keyspace), "-P", str(depth), "-c", str(args.clients),
        "-d", "64", "--csv",
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S, check=True).stdout
    for row in csv.reader(out.splitlines()):
        if row and row[0].upper() == test.upper():
            return float(row[1])
    sys.exit(f"no figure for {test} in redis-benchmark's output:\n{out}")


def chart(rows, tests, path, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing: no chart (pip install matplotlib)", file=sys.stderr)
        return
    figure, axes = plt.subplots(1, len(tests), figsize=(6 * len(tests), 4.5), squeeze=False)
    for axis, test in zip(axes[0], tests):
        mine = [r for r in rows if r["test"] == test]
        depths = [r["pipeline"] for r in mine]
        axis.plot(depths, [r["redis_rps"] for r in mine], "o-", label="Redis 7 (redis-server)")
        axis.plot(depths, [r["meridian_rps"] for r in mine], "s-", label="Meridian")
        axis.set_xscale("log", base=2)
        axis.set_xticks(depths, [str(d) for d in depths])
        axis.set_xlabel("pipeline depth (redis-benchmark -P)")
        axis.set_ylabel("requests per second")
        axis.set_title(test.upper())
        axis.grid(True, alpha=0.3)
        axis.legend()
        for r in mine:
            axis.annotate(f"{r['ratio']:.2f}x", (r["pipeline"], r["meridian_rps"]), textcoords="offset points", xytext=(0, -14), ha="center", fontsize=8)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"chart: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", default="set,get")
    parser.add_argument("--depths", default="1,2,4,8,16,32,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--keyspace", type=int, default=1000000)
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--client-core", type=int, default=1)
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target", "release", "meridian"))
    parser.add_argument("--meridian-args", default="--shards 1")
    parser.add_argument("--csv", default=os.path.join(HERE, "results", "pipeline-curve.csv"))
    parser.add_argument("--png", default=os.path.join(HERE, "results", "pipeline-curve.png"))
    args = parser.parse_args()
    assert args.rounds >= 1 and args.requests >= 1, "rounds and requests must be positive"
    if not os.access(args.meridian, os.X_OK):
        sys.exit(f"no meridian binary at {args.meridian} (cargo build --release)")
    tests = args.tests.split(",")
    depths = [int(d) for d in args.depths.split(",")]

    load_before = load_average()
    results = {}  # (server, test, depth) -> [rps]
    with tempfile.TemporaryDirectory(prefix="pipeline-curve-") as workdir:
        servers = {
            kind: start_server(kind, workdir, args.meridian, args.server_core, shlex.split(args.meridian_args))
            for kind in ("redis", "meridian")
        }
        try:
            for test in tests:
                for depth in depths:
                    for round_ in range(args.rounds):
                        for kind in ("redis", "meridian"):
                            rps = bench(servers[kind][1], test, depth, args)
                            results.setdefault((kind, test, depth), []).append(rps)
                            print(f"{test} P={depth} round {round_ + 1} {kind}: {rps:,.0f} rps", file=sys.stderr)
        finally:
            for process, _ in servers.values():
                stop(process)
    load_after = load_average()

    rows = []
    for test in tests:
        for depth in depths:
            redis = statistics.median(results[("redis", test, depth)])
            meridian = statistics.median(results[("meridian", test, depth)])
            rows.append({"test": test, "pipeline": depth, "redis_rps": redis, "meridian_rps": meridian, "ratio": meridian / redis})
    title = (
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, server on core {args.server_core}, "
        f"redis-benchmark on core {args.client_core}, -c {args.clients} -r {args.keyspace} -d 64, "
        f"median of {args.rounds}, load average {load_before} -> {load_after}"
    )
    os.makedirs(os.path.dirname(args.csv), exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        f.write(f"# {title}\n")
        writer = csv.DictWriter(f, fieldnames=["test", "pipeline", "redis_rps", "meridian_rps", "ratio"])
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "redis_rps": round(row["redis_rps"]), "meridian_rps": round(row["meridian_rps"]), "ratio": f"{row['ratio']:.2f}"})
    print(title)
    print("| test | pipeline | Redis (rps) | Meridian (rps) | Meridian / Redis |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['test'].upper()} | {row['pipeline']} | {row['redis_rps']:,.0f} | {row['meridian_rps']:,.0f} | **{row['ratio']:.2f}** |")
    chart(rows, tests, args.png, title)


if __name__ == "__main__":
    main()
