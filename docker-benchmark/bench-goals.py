#!/usr/bin/env python3
"""Issue 16's goals in one table: Meridian against redis-server, one run.

Runs the three benchmarks that measure them and prints one table of goal, figure,
target and verdict:

- `bench-matrix.py`: SET GET HSET SADD ZADD LPUSH LPOP at P=16 and P=1 (requests/s and
  each server's CPU per request), with three Meridian columns in the same rounds: the
  default (persistence to a local folder), `--persistence off`, and two peers configured
  (down, so what is measured is the sender's cost), for "persistence on vs off" and
  "two peers vs none" (by requests/s, and by the server's CPU per request, all its
  threads: the figure that moves less with a noisy machine);
- `bench-memory.py`: bytes per key of 1M strings (64-byte values) and 1M counters;
- `bench-sync-writes.py`: `--durability sync` p50/p99 and writes/s at 1, 8 and 50
  clients against a local folder and moto's S3 server (Redis `appendfsync always` beside).

A throughput row whose client was at least 90 % busy (bench-matrix's ⚠) is marked
"client-bound": there the requests/s ratio measures redis-benchmark, and the CPU ratio
(Redis's CPU per request over Meridian's) is the one that compares the servers.

    docker-benchmark/bench-goals.py                   # 5 rounds, full sizes (~25 minutes on 2 cores)
    docker-benchmark/bench-goals.py --quick           # 1 round, a tenth of the sizes (a smoke run)
    docker-benchmark/bench-goals.py --meridian /path/to/meridian

Needs what the three scripts need (redis-server, redis-benchmark, redis-cli, taskset,
python3's redis, moto). Only ratios from one run mean anything.
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (test, pipeline, least Meridian / Redis): issue 16's throughput goals.
THROUGHPUT_GOALS = [
    ("SET", 16, 1.5), ("GET", 16, 1.5), ("SET", 1, 1.1), ("GET", 1, 1.1),
    ("HSET", 16, 1.2), ("SADD", 16, 1.2), ("ZADD", 16, 1.2), ("LPUSH", 16, 1.2), ("LPOP", 16, 1.2),
]
# (memory shape as bench-memory.py prints it, most Meridian / Redis).
MEMORY_GOALS = [("strings 64 B", 1.0), ("counters", 1.0)]
# Least ratios between Meridian's own columns (same rounds), on the write tests.
COST_GOALS = [("off", "persistence on vs off", 0.95), ("peers", "two peers vs none", 0.9)]
COST_TESTS = ("SET", "HSET", "SADD", "ZADD", "LPUSH")
PEERS = "--node-id 1 --repl-port 0 --peers 127.0.0.1:7771,127.0.0.1:7772"


def run(command, env=None):
    """Run one benchmark script, echoing its output as it comes; its whole output."""
    print("$ " + " ".join(command), flush=True)
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        for line in proc.stdout:
            sys.stdout.write("  " + line)
            lines.append(line)
    if proc.returncode != 0:
        sys.exit(f"bench-goals: {os.path.basename(command[1])} failed (exit {proc.returncode})")
    return "".join(lines)


def markdown_rows(text, first_header):
    """The rows of the first markdown table whose first header cell is `first_header`,
    as dicts by header name."""
    rows, header = [], None
    for line in text.splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells if line.startswith("|") and cells[0] == first_header else None
        elif not line.startswith("|"):
            break
        elif not set(cells[0]) <= {"-"}:
            rows.append(dict(zip(header, cells)))
    return rows


def number(cell):
    return float(re.sub(r"[^0-9.]", "", cell))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target", "release", "meridian"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 round, a tenth of the sizes: a smoke run")
    opts = parser.parse_args()
    if not os.access(opts.meridian, os.X_OK):
        sys.exit(f"bench-goals: no Meridian binary at {opts.meridian} (cargo build --release --bin meridian)")
    rounds = 1 if opts.quick else opts.rounds
    scale = 0.1 if opts.quick else 1.0
    python = sys.executable
    env = dict(os.environ)
    # The peers' link needs a cluster secret; the peers never answer, so any will do.
    env.setdefault("MERIDIAN_CLUSTER_SECRET", "bench-goals-cluster-secret")

    matrix = run([python, os.path.join(HERE, "bench-matrix.py"), "--rounds", str(rounds), "--pipelines", "16,1",
                  "--only", "SET,GET,HSET,SADD,ZADD,LPUSH,LPOP",
                  "--requests-p16", str(int(1_000_000 * scale)), "--requests-p1", str(int(200_000 * scale)),
                  "--meridian", f"meridian={opts.meridian}",
                  "--meridian", f"off={opts.meridian}:--persistence off",
                  "--meridian", f"peers={opts.meridian}:{PEERS}"], env=env)
    memory = run([python, os.path.join(HERE, "bench-memory.py"), "--meridian", opts.meridian,
                  "--only", ",".join(shape for shape, _ in MEMORY_GOALS), "--scale", str(scale)])
    sync = run([python, os.path.join(HERE, "bench-sync-writes.py"), "--meridian", opts.meridian,
                "--seconds", "1" if opts.quick else "5", "--clients", "1,8,50"])

    by_test = {(r["test"], int(r["P"])): r for r in markdown_rows(matrix, "test")}
    table = []
    for test, pipeline, target in THROUGHPUT_GOALS:
        row = by_test[(test, pipeline)]
        ratio, by_cpu = number(row["meridian/redis"]), number(row["redis/meridian by CPU"])
        client_bound = "⚠" in row[list(row)[-1]]
        verdict = "client-bound" if client_bound and ratio < target else ("met" if ratio >= target else "below")
        table.append((f"{test} P={pipeline}, requests/s Meridian / Redis", f"{ratio:.2f} (by CPU {by_cpu:.2f})",
                      f"≥ {target}", verdict))
    for column, goal, target in COST_GOALS:
        for test in COST_TESTS:
            row = by_test[(test, 16)]
            # Same rounds: the on (or no-peer) column over the other, by requests/s, and
            # by the server's CPU per request (all its threads), which moves far less
            # with the machine's noise than a rate does.
            ratio = number(row[f"{column} req/s"]) / number(row["meridian req/s"])
            by_cpu = number(row["meridian CPU µs/req"]) / number(row[f"{column} CPU µs/req"])
            if column == "off":
                ratio, by_cpu = 1 / ratio, 1 / by_cpu
            table.append((f"{goal}, {test} P=16 (requests/s)", f"{ratio:.2f} (by CPU {by_cpu:.2f})", f"≥ {target}",
                          "met" if ratio >= target else "below"))
    for line in memory.splitlines():
        for shape, target in MEMORY_GOALS:
            if line.startswith(shape):
                ratio = float(line.split()[-1])
                table.append((f"memory, {shape} ({line.split()[-5]} {line.split()[-4]}s), Meridian / Redis",
                              f"{ratio:.2f}", f"≤ {target}", "met" if ratio <= target else "below"))
    for row in markdown_rows(sync, "Server"):
        if row["Server"].startswith("Meridian"):
            table.append((f"sync writes, {row['Server']}, {row['Clients']} clients",
                          f"p50 {row['p50 ms']} ms, p99 {row['p99 ms']} ms, {row['writes/s']} writes/s "
                          f"({row['writes/s vs Redis']} Redis's)", "p50 ≈ one store write; grows with clients", "report"))

    print()
    print(f"Issue 16's goals, one run ({rounds} round{'s' if rounds > 1 else ''}{', quick sizes' if opts.quick else ''}):")
    print()
    print("| goal | measured | target | verdict |")
    print("|---|---|---|---|")
    for goal, measured, target, verdict in table:
        print(f"| {goal} | {measured} | {target} | {verdict} |")


if __name__ == "__main__":
    main()
