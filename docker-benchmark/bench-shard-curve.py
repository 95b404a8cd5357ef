#!/usr/bin/env python3
"""SET/GET throughput against the number of cores: Meridian with 1, 2, 4, 8 shards
against Redis on one core and Redis with io-threads on the same number of cores.

Issue 16 asks for this curve "when a many-core machine is at hand": on a 2-core
machine it means nothing (client and servers would share cores). Each server gets the
cores 0..N-1 (taskset), redis-benchmark gets the cores after them (--threads), so client
and server never share one. Rounds alternate every configuration (Redis 1 core, Redis
io-threads N, Meridian N shards, ...) and the median per configuration is kept.
Meridian runs with its default persistence to a local folder, which counts against it.

Ratios printed per core count:
  vs Redis        = Meridian N shards / Redis on one core (what scaling out buys)
  vs io-threads   = Meridian N shards / Redis with io-threads N on the same N cores

Usage:
  docker-benchmark/bench-shard-curve.py [--cores 1,2,4,8] [--tests set,get]
      [--pipeline 16] [--rounds 3] [--requests 3000000] [--clients 256]
      [--client-threads 8] [--meridian target/release/meridian]
      [--csv docker-benchmark/results/shard-curve.csv]
      [--png docker-benchmark/results/shard-curve.png]
  docker-benchmark/bench-shard-curve.py --from-csv FILE --png FILE   (redraw a chart)

Needs redis-server, redis-benchmark, redis-cli and taskset on PATH, and at least
max(--cores) + --client-threads cores (it refuses to run otherwise).
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import load_average, start_server, stop

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH_TIMEOUT_S = 300


def core_list(first, count):
    """taskset's list for `count` cores starting at `first`."""
    return str(first) if count == 1 else f"{first}-{first + count - 1}"


def bench(port, test, args, client_cores):
    """Requests per second of one redis-benchmark run."""
    command = [
        "taskset", "-c", client_cores, "redis-benchmark", "-p", str(port), "-t", test,
        "-n", str(args.requests), "-r", "1000000", "-P", str(args.pipeline), "-c", str(args.clients),
        "--threads", str(args.client_threads), "-d", "64", "--csv",
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S, check=True).stdout
    for row in csv.reader(out.splitlines()):
        if row and row[0].upper() == test.upper():
            return float(row[1])
    sys.exit(f"no figure for {test} in redis-benchmark's output:\n{out}")


def configurations(cores):
    """(label, kind, core count, meridian args, redis args) for every server measured."""
    configs = [("redis 1 core", "redis", 1, (), ())]
    for n in cores:
        if n > 1:
            configs.append((f"redis io-threads {n}", "redis", n, (), ("--io-threads", str(n), "--io-threads-do-reads", "yes")))
    for n in cores:
        configs.append((f"meridian {n} shards", "meridian", n, ("--shards", str(n)), ()))
    return configs


def chart(rows, title, path):
    """requests/s against cores, one panel per test: Meridian, Redis io-threads, Redis."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing: no chart (pip install matplotlib)", file=sys.stderr)
        return
    tests = sorted({r["test"] for r in rows}, key=lambda t: [r["test"] for r in rows].index(t))
    figure, axes = plt.subplots(1, len(tests), figsize=(6 * len(tests), 4.5), squeeze=False)
    for axis, test in zip(axes[0], tests):
        mine = [r for r in rows if r["test"] == test]
        cores = [int(r["cores"]) for r in mine]
        axis.plot(cores, [int(r["meridian_rps"]) for r in mine], "s-", label="Meridian, N shards")
        axis.plot(cores, [int(r["redis_io_threads_rps"]) for r in mine], "o-", label="Redis 7, io-threads N")
        axis.plot(cores, [int(r["redis_1_core_rps"]) for r in mine], "k--", label="Redis 7, one core")
        axis.set_xscale("log", base=2)
        axis.set_xticks(cores, [str(c) for c in cores])
        axis.set_xlabel("server cores")
        axis.set_ylabel("requests per second")
        axis.set_title(f"{test.upper()}")
        axis.grid(True, alpha=0.3)
        axis.legend()
    figure.suptitle(title, fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"chart: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", default="1,2,4,8")
    parser.add_argument("--tests", default="set,get")
    parser.add_argument("--pipeline", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=3_000_000)
    parser.add_argument("--clients", type=int, default=256)
    parser.add_argument("--client-threads", type=int, default=8)
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target", "release", "meridian"))
    parser.add_argument("--csv", default=os.path.join(HERE, "results", "shard-curve.csv"))
    parser.add_argument("--png", default=os.path.join(HERE, "results", "shard-curve.png"))
    parser.add_argument("--from-csv", help="redraw the chart of an earlier run's CSV and exit")
    args = parser.parse_args()
    if args.from_csv:
        with open(args.from_csv) as f:
            title = f.readline().lstrip("# ").strip()
            chart(list(csv.DictReader(f)), title, args.png)
        return
    cores = [int(c) for c in args.cores.split(",")]
    tests = args.tests.split(",")
    assert args.rounds >= 1 and args.requests >= 1 and min(cores) >= 1, "rounds, requests and cores must be positive"
    if max(cores) + args.client_threads > (os.cpu_count() or 1):
        sys.exit(f"needs {max(cores) + args.client_threads} cores (servers + client threads), this machine has {os.cpu_count()}")
    if not os.access(args.meridian, os.X_OK):
        sys.exit(f"no meridian binary at {args.meridian} (cargo build --release)")
    client_cores = core_list(max(cores), args.client_threads)

    load_before = load_average()
    results = {}  # (label, test) -> [rps]
    configs = configurations(cores)
    with tempfile.TemporaryDirectory(prefix="shard-curve-") as workdir:
        for round_ in range(args.rounds):
            for label, kind, n, meridian_args, redis_args in configs:
                process, port = start_server(kind, workdir, args.meridian, core_list(0, n), meridian_args, redis_args=redis_args)
                try:
                    for test in tests:
                        rps = bench(port, test, args, client_cores)
                        results.setdefault((label, test), []).append(rps)
                        print(f"round {round_ + 1} {label} {test}: {rps:,.0f} rps", file=sys.stderr, flush=True)
                finally:
                    stop(process)
    load_after = load_average()

    title = (
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, redis-benchmark --threads {args.client_threads} "
        f"on cores {client_cores}, -c {args.clients} -P {args.pipeline} -r 1000000 -d 64, -n {args.requests}, "
        f"median of {args.rounds}, load average {load_before} -> {load_after}"
    )
    median = {key: statistics.median(values) for key, values in results.items()}
    rows = []
    for test in tests:
        single = median[("redis 1 core", test)]
        for n in cores:
            meridian = median[(f"meridian {n} shards", test)]
            threaded = median[(f"redis io-threads {n}", test)] if n > 1 else single
            rows.append({
                "test": test, "cores": n, "redis_1_core_rps": round(single), "redis_io_threads_rps": round(threaded),
                "meridian_rps": round(meridian), "vs_redis": f"{meridian / single:.2f}", "vs_io_threads": f"{meridian / threaded:.2f}",
            })
    os.makedirs(os.path.dirname(args.csv), exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        f.write(f"# {title}\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print(title)
    print("| test | cores | Redis 1 core (rps) | Redis io-threads N (rps) | Meridian N shards (rps) | vs Redis | vs io-threads |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['test'].upper()} | {r['cores']} | {r['redis_1_core_rps']:,} | {r['redis_io_threads_rps']:,} | {r['meridian_rps']:,} | **{r['vs_redis']}** | **{r['vs_io_threads']}** |")
    chart(rows, title, args.png)


if __name__ == "__main__":
    main()
