#!/usr/bin/env python3
"""One table of the single-core throughput goals (issues 14, 15, 16): Debian's
redis-server against one or more Meridian binaries, same machine, same run.

Each server is pinned to one core (`--server-core`) and `redis-benchmark` to others
(`--client-cores`, with `--threads` of its own so that the client is never the limit).
Rounds alternate the servers (redis, meridian A, meridian B, ..., redis, ...); in each
round a fresh server runs every test in order (GET after SET, so GET finds the keys SET
wrote; pops after pushes). The table gives each Meridian binary's median requests per
second over the median of Redis's, per test and pipeline depth, and, because on a small
machine the client is often the limit, each server's own CPU time per request (user +
system, every thread, from /proc) with Redis's over Meridian's: above 1, Meridian spent
less of its core on each request than Redis did, whoever was the limit of the run.

    docker-benchmark/bench-matrix.py                                  # target/release/meridian
    docker-benchmark/bench-matrix.py --meridian a=/path/a --meridian b=/path/b --rounds 5
    docker-benchmark/bench-matrix.py --meridian on=target/release/meridian \
        --meridian "off=target/release/meridian:--persistence off"       # flags per binary
    docker-benchmark/bench-matrix.py --redis "aof:--appendonly yes --appendfsync everysec"
    docker-benchmark/bench-matrix.py --only SET,GET --pipelines 16

Needs redis-server, redis-benchmark, redis-cli and taskset on PATH. Only ratios from one
run mean anything; the load average is printed before and after.
"""

import argparse
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import MERIDIAN_BIN, start_server, stop
from benchlib import cpu_seconds, load_average

BENCH_TIMEOUT_S = 600
# A client this busy (share of the cores it may use) was the limit of its run.
CLIENT_BOUND_SHARE = 0.9

# (name, redis-benchmark arguments before -P/-n/-c). Order is the order run in each
# round: a test that reads follows the one that writes what it reads.
TESTS = [
    ("SET", ["-t", "set", "-r", "1000000", "-d", "64"]),
    ("GET", ["-t", "get", "-r", "1000000", "-d", "64"]),
    ("INCR", ["-t", "incr", "-r", "1000000"]),
    ("HSET", ["-r", "100000", "HSET", "hash:1", "f:__rand_int__", "value-16-bytes.."]),
    ("HGET", ["-r", "100000", "HGET", "hash:1", "f:__rand_int__"]),
    ("SADD", ["-r", "100000", "SADD", "set:1", "m:__rand_int__"]),
    ("SISMEMBER", ["-r", "100000", "SISMEMBER", "set:1", "m:__rand_int__"]),
    ("ZADD", ["-r", "100000", "ZADD", "zset:1", "__rand_int__", "m:__rand_int__"]),
    ("ZSCORE", ["-r", "100000", "ZSCORE", "zset:1", "m:__rand_int__"]),
    ("ZRANGE_100", ["ZRANGE", "zset:1", "0", "99", "WITHSCORES"]),
    ("LPUSH", ["-t", "lpush", "-d", "16"]),
    ("RPUSH", ["-t", "rpush", "-d", "16"]),
    ("LRANGE_100", ["-t", "lrange_100", "-d", "16"]),
    ("LPOP", ["-t", "lpop", "-d", "16"]),
    ("RPOP", ["-t", "rpop", "-d", "16"]),
]


def rate(server_pid, port, args, pipeline, requests, clients, client_cores, threads):
    """Requests per second of one redis-benchmark run, the share of the client's cores
    it kept busy (its CPU time over the run's wall time and the cores it may use: near 1,
    the client was the limit and the rate says little about the server), and the
    server's CPU seconds per request over the run."""
    command = ["taskset", "-c", client_cores, "redis-benchmark", "-p", str(port), "-c", str(clients), "-n", str(requests),
               "-P", str(pipeline), "--csv"]
    if threads > 1:
        command += ["--threads", str(threads)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = cpu_seconds(server_pid)
    started = time.monotonic()
    out = subprocess.run(command + args, capture_output=True, timeout=BENCH_TIMEOUT_S)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = cpu_seconds(server_pid) - server_before
    rows = [line for line in out.stdout.decode().splitlines() if line.startswith('"') and not line.startswith('"test"')]
    if out.returncode != 0 or not rows:
        sys.exit(f"bench-matrix: redis-benchmark failed on {args}: {out.stderr.decode().strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    usable = min(threads, core_count(client_cores))
    # redis-benchmark sends `requests` commands (a pipeline's last batch included).
    return float(rows[-1].split(",")[1].strip('"')), cpu / wall / usable, server_cpu / requests


def core_count(cores):
    """Cores in a taskset list such as `1`, `1,3` or `1-3`."""
    count = 0
    for part in cores.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meridian", action="append",
                        help="NAME=PATH[:FLAGS] of a Meridian binary, FLAGS added to --meridian-args (repeatable)")
    parser.add_argument("--redis", action="append", default=[],
                        help="NAME:FLAGS of a further redis-server column, e.g. with AOF on (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated test names")
    parser.add_argument("--pipelines", default="16,1")
    parser.add_argument("--requests-p16", type=int, default=1_000_000)
    parser.add_argument("--requests-p1", type=int, default=200_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-cores", default="1")
    parser.add_argument("--threads", type=int, default=1, help="redis-benchmark --threads")
    parser.add_argument("--verbose", action="store_true", help="print each run's rate as it ends (a cut-off run keeps them)")
    parser.add_argument("--meridian-args", default="--shards 1", help="extra Meridian flags")
    opts = parser.parse_args()

    for tool in ("redis-server", "redis-cli", "redis-benchmark", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"bench-matrix: needs {tool} (apt-get install redis-server redis-tools util-linux)")
    binaries = []
    for spec in opts.meridian or [f"meridian={MERIDIAN_BIN}"]:
        name, _, rest = spec.partition("=")
        path, _, flags = rest.partition(":")
        if not path or not os.access(path, os.X_OK):
            sys.exit(f"bench-matrix: --meridian {spec}: not NAME=PATH[:FLAGS] of an executable")
        binaries.append((name, path, tuple(opts.meridian_args.split() + flags.split())))
    tests = [t for t in TESTS if not opts.only or t[0] in opts.only.split(",")]
    pipelines = [int(p) for p in opts.pipelines.split(",")]
    for spec in opts.redis:
        name, _, flags = spec.partition(":")
        binaries.append((name, None, tuple(flags.split())))
    servers = [("redis", None, ())] + binaries
    results = {}  # (server, test, pipeline) -> [rates]
    client_busy = {}  # (server, test, pipeline) -> [share of the client's cores busy]
    server_cpu = {}  # (server, test, pipeline) -> [server CPU seconds per request]
    print(f"load average before: {load_average()}; server core {opts.server_core}, client cores {opts.client_cores}, "
          f"redis-benchmark threads {opts.threads}, {opts.clients} clients, {opts.rounds} rounds", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as workdir:
        for round_no in range(opts.rounds):
            for name, path, flags in servers:
                kind = "redis" if path is None else "meridian"
                log = open(os.path.join(workdir, f"{name}.log"), "ab")
                process, port = start_server(kind, workdir, path or MERIDIAN_BIN, core=opts.server_core,
                                             meridian_args=flags, log=log, redis_args=("--dir", workdir, *flags))
                try:
                    for pipeline in pipelines:
                        requests = opts.requests_p16 if pipeline > 1 else opts.requests_p1
                        for test, args in tests:
                            r, busy, cpu = rate(process.pid, port, args, pipeline, requests, opts.clients, opts.client_cores,
                                                opts.threads)
                            results.setdefault((name, test, pipeline), []).append(r)
                            client_busy.setdefault((name, test, pipeline), []).append(busy)
                            server_cpu.setdefault((name, test, pipeline), []).append(cpu)
                            if opts.verbose:
                                print(f"  round {round_no + 1} {name} P={pipeline} {test}: {r:,.0f} (client busy {busy:.0%}, "
                                      f"server {cpu * 1e6:.2f} us/request)", flush=True)
                finally:
                    stop(process)
                    log.close()
            print(f"round {round_no + 1}/{opts.rounds} done, load average {load_average()}", flush=True)
    out = io.StringIO()
    header = ("| test | P | redis req/s | " + " | ".join(f"{n} req/s | {n}/redis" for n, _, _ in binaries)
              + " | redis CPU µs/req | " + " | ".join(f"{n} CPU µs/req | redis/{n} by CPU" for n, _, _ in binaries)
              + " | client busy (redis" + "".join(f", {n}" for n, _, _ in binaries) + ") |")
    out.write(header + "\n" + "|---" * (5 + 4 * len(binaries)) + "|\n")
    client_bound = False
    for pipeline in pipelines:
        for test, _ in tests:
            base = statistics.median(results[("redis", test, pipeline)])
            cells = [test, str(pipeline), f"{base:,.0f}"]
            for name, _, _ in binaries:
                m = statistics.median(results[(name, test, pipeline)])
                cells += [f"{m:,.0f}", f"**{m / base:.2f}**"]
            base_cpu = statistics.median(server_cpu[("redis", test, pipeline)])
            cells.append(f"{base_cpu * 1e6:.2f}")
            for name, _, _ in binaries:
                m_cpu = statistics.median(server_cpu[(name, test, pipeline)])
                cells += [f"{m_cpu * 1e6:.2f}", f"**{base_cpu / m_cpu:.2f}**" if m_cpu > 0 else "-"]
            busy = [statistics.median(client_busy[(name, test, pipeline)]) for name, _, _ in servers]
            client_bound |= max(busy) >= CLIENT_BOUND_SHARE
            cells.append(" / ".join(f"{b:.0%}" for b in busy) + (" ⚠" if max(busy) >= CLIENT_BOUND_SHARE else ""))
            out.write("| " + " | ".join(cells) + " |\n")
    if client_bound:
        out.write(f"\n⚠ redis-benchmark kept its cores at least {CLIENT_BOUND_SHARE:.0%} busy (median of the rounds): "
                  "there the client was (close to) the limit, and the ratio measures the client more than the "
                  "servers. Give it more cores (--client-cores, --threads) where the machine has them.\n")
    print(out.getvalue())
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
