#!/usr/bin/env python3
"""Durable writes: Meridian `--durability sync` against Redis `appendfsync always`, same run.

For 1, 8 and 50 clients, each client sends SETs one at a time (no pipelining) and
waits for each reply, for --seconds per cell. A reply means durable: for Meridian, the
segment holding the write is stored (a local folder, synced to the device with the
default `--fsync on` and not with `--fsync off`, or moto's S3 server over HTTP); for
Redis, the AOF is written and fsync'ed. Prints p50 and p99 latency and acknowledged
writes per second for every cell, and Meridian / Redis ratios (writes/s: higher is
better for Meridian; p50: lower is better for Meridian).

Clients are separate processes (not threads: one Python's GIL would be what is
measured). Each cell runs against a fresh server.

usage: docker-benchmark/bench-sync-writes.py [--meridian BIN] [--seconds S]
         [--clients 1,8,50] [--value-bytes N] [--shards N]
Needs redis-server, python3's `redis` and moto's server (`moto_server` or
`python3 -m moto.server`). Exits non-zero when a server fails to start or a write fails;
the figures never fail the run.
"""

import argparse
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "bench"


# Redis with an fsync before every reply; Meridian to a local folder with its default
# `--fsync on` (each segment synced before it counts as stored) and with `--fsync off`
# (what the syncs cost); Meridian to moto's S3 server.
TARGETS = ("redis", "folder", "folder-nofsync", "s3")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ping(port, proc, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server on port {port} exited with {proc.returncode}")
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return
        except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError, redis.exceptions.TimeoutError):
            pass
        time.sleep(0.05)
    sys.exit(f"server on port {port} did not answer PING in {timeout_s} s")


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def start_moto():
    port = free_port()
    command = ["moto_server"] if shutil.which("moto_server") else [sys.executable, "-m", "moto.server"]
    proc = subprocess.Popen(command + ["-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/{BUCKET}", method="PUT"), timeout=1)
            return proc, port
        except OSError:
            if proc.poll() is not None:
                sys.exit("moto_server exited at start")
            time.sleep(0.1)
    sys.exit("moto_server did not answer in 30 s")


def start_meridian(binary, target, moto_port, shards, tag):
    port = free_port()
    data = tempfile.mkdtemp(prefix=f"bench-sync-{tag}-")
    args = [binary, "--bind", "127.0.0.1", "--port", str(port), "--durability", "sync", "--data-dir", data]
    if shards:
        args += ["--shards", str(shards)]
    if target == "folder-nofsync":
        args += ["--fsync", "off"]
    env = dict(os.environ)
    if target == "s3":
        args += ["--object-store", f"s3://{BUCKET}/{tag}"]
        env.update(
            AWS_ENDPOINT_URL=f"http://127.0.0.1:{moto_port}",
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_REGION="us-east-1",
            AWS_ALLOW_HTTP="true",
        )
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ping(port, proc)
    return proc, port, data


def start_redis():
    port = free_port()
    data = tempfile.mkdtemp(prefix="bench-sync-redis-")
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", data, "--save", "",
            "--appendonly", "yes", "--appendfsync", "always"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ping(port, proc)
    return proc, port, data


def client(args):
    """One client: SET until the deadline; returns its latencies in seconds."""
    port, client_id, start_at, seconds, value = args
    con = redis.Redis(port=port, socket_timeout=60)
    con.ping()
    while time.time() < start_at:
        time.sleep(0.001)
    latencies = []
    end = start_at + seconds
    i = 0
    while time.time() < end:
        begin = time.perf_counter()
        con.set(f"c{client_id}:{i}", value)
        latencies.append(time.perf_counter() - begin)
        i += 1
    return latencies


def measure(port, clients, seconds, value):
    start_at = time.time() + 1.0  # every process connected before the clock starts
    jobs = [(port, c, start_at, seconds, value) for c in range(clients)]
    with multiprocessing.Pool(clients) as pool:
        results = pool.map(client, jobs)
    latencies = sorted(x for r in results for x in r)
    if not latencies:
        sys.exit("no write was acknowledged")
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    return {"p50_ms": p50, "p99_ms": p99, "writes_s": len(latencies) / seconds, "writes": len(latencies)}


def segments_written(port):
    info = redis.Redis(port=port).info("persistence")
    return info.get("segments_written", 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target", "release", "meridian"))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", default="1,8,50")
    parser.add_argument("--value-bytes", type=int, default=64)
    parser.add_argument("--shards", type=int, default=0, help="Meridian --shards (default: its own default)")
    opts = parser.parse_args()
    if not os.access(opts.meridian, os.X_OK):
        sys.exit(f"no meridian binary at {opts.meridian} (cargo build --release -p meridian)")
    if not shutil.which("redis-server"):
        sys.exit("redis-server is not installed")
    counts = [int(c) for c in opts.clients.split(",")]
    value = "v" * opts.value_bytes
    load_before = os.getloadavg()
    moto, moto_port = start_moto()
    rows = []
    try:
        for clients in counts:
            # Alternate the servers within one client count so drifting machine load
            # hits them alike.
            for target in TARGETS:
                if target == "redis":
                    proc, port, data = start_redis()
                else:
                    proc, port, data = start_meridian(opts.meridian, target, moto_port, opts.shards, f"{target}-{clients}")
                try:
                    row = measure(port, clients, opts.seconds, value)
                    row["segments"] = segments_written(port) if target != "redis" else None
                finally:
                    stop(proc)
                    shutil.rmtree(data, ignore_errors=True)
                row.update(target=target, clients=clients)
                rows.append(row)
                seg = f" segments={row['segments']}" if row["segments"] is not None else ""
                print(f"{target:14} clients={clients:3} p50={row['p50_ms']:8.3f} ms p99={row['p99_ms']:8.3f} ms "
                      f"writes/s={row['writes_s']:9.1f}{seg}", flush=True)
    finally:
        stop(moto)
    load_after = os.getloadavg()

    by = {(r["target"], r["clients"]): r for r in rows}
    print()
    print(f"Sync SETs, {opts.value_bytes}-byte values, {opts.seconds:g} s per cell, one process per client; "
          f"{os.cpu_count()} cores; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print()
    print("| Server | Clients | p50 ms | p99 ms | writes/s | writes per segment | writes/s vs Redis | p50 vs Redis |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    names = {
        "redis": "Redis `appendfsync always`",
        "folder": "Meridian, local folder (`--fsync on`)",
        "folder-nofsync": "Meridian, local folder, `--fsync off`",
        "s3": "Meridian, moto S3",
    }
    for clients in counts:
        base = by[("redis", clients)]
        for target in TARGETS:
            r = by[(target, clients)]
            per_segment = f"{r['writes'] / r['segments']:.1f}" if r["segments"] else "–"
            print(f"| {names[target]} | {clients} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['writes_s']:.0f} | {per_segment} | "
                  f"{r['writes_s'] / base['writes_s']:.2f}× | {r['p50_ms'] / base['p50_ms']:.2f}× |")


if __name__ == "__main__":
    main()
