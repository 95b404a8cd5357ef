#!/usr/bin/env python3
"""Memory per key or element: Meridian against Debian's redis-server, same data, same run.

For each data shape, start a fresh server, note its RSS, load the shape through
`redis-cli --pipe`, check that the server holds what was sent (DBSIZE and the
collection's cardinality), wait for RSS to settle and report the growth per key or
element. Ratio = Meridian's bytes / Redis's bytes: at most 1.00 means Meridian used no
more memory than Redis for the same data.

usage: docker-benchmark/bench-memory.py [--scale F] [--only NAME,...] [--meridian BIN]
  --scale 0.1 loads a tenth of every shape (a quick look; the table in
  docs/benchmarks.md is --scale 1).
Exits non-zero when a server fails to start, loses data, or a load fails; the ratio
itself never fails the run (targets are read from the table, not asserted here).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import cli, resp, rss_bytes, start_server


def start(kind, meridian_bin, workdir):
    return start_server(kind, workdir, meridian_bin)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shapes(scale):
    """(name, unit, count, command stream, check) for each shape. Keys and members are
    fixed-width so both servers get byte-identical input."""
    n = lambda x: max(1, int(x * scale))

    def strings(count):
        value = b"v" * 64
        for i in range(count):
            yield resp(b"SET", b"key:%010d" % i, value)

    def counters(count):
        for i in range(count):
            yield resp(b"INCRBY", b"ctr:%010d" % i, 1000 + i)

    def big(command, key, count, member, with_score=False, value=None, batch=1000):
        for start in range(0, count, batch):
            args = [command, key]
            for i in range(start, min(count, start + batch)):
                if with_score:
                    args.append(b"%d" % i)
                args.append(member(i))
                if value is not None:
                    args.append(value)
            yield resp(*args)

    def small_hashes(count):
        for i in range(count):
            args = [b"HSET", b"h:%010d" % i]
            for f in range(10):
                args += [b"field%d" % f, b"value-%08d" % i]
            yield resp(*args)

    m16 = lambda i: b"member:%09d" % i  # 16 bytes
    return [
        ("strings 64 B", "key", n(1_000_000), strings, ("dbsize", None)),
        ("counters", "key", n(1_000_000), counters, ("dbsize", None)),
        ("hash 1 field each", "field", n(1_000_000),
         lambda c: big(b"HSET", b"bighash", c, lambda i: b"field:%010d" % i, value=b"v" * 16), ("HLEN", b"bighash")),
        ("set 16 B members", "member", n(1_000_000), lambda c: big(b"SADD", b"bigset", c, m16), ("SCARD", b"bigset")),
        ("sorted set 16 B", "member", n(1_000_000),
         lambda c: big(b"ZADD", b"bigzset", c, m16, with_score=True), ("ZCARD", b"bigzset")),
        ("small hashes (10 fields)", "key", n(100_000), small_hashes, ("dbsize", None)),
        ("list 16 B elements", "element", n(1_000_000), lambda c: big(b"RPUSH", b"biglist", c, m16), ("LLEN", b"biglist")),
    ]


def settle(pid):
    """RSS once it stops moving (allocator and background work done), within 10 s."""
    last, stable_since = rss_bytes(pid), time.time()
    deadline = time.time() + 10
    while time.time() < deadline:
        time.sleep(0.25)
        now = rss_bytes(pid)
        if abs(now - last) > 64 * 1024:
            last, stable_since = now, time.time()
        elif time.time() - stable_since >= 1.0:
            break
    return last


def measure(kind, meridian_bin, workdir, shape):
    name, unit, count, stream, (check, key) = shape
    proc, port = start(kind, meridian_bin, workdir)
    try:
        before = settle(proc.pid)
        load = subprocess.Popen(["redis-cli", "-p", str(port), "--pipe"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        buf = []
        size = 0
        for chunk in stream(count):
            buf.append(chunk)
            size += len(chunk)
            if size > 1 << 20:
                load.stdin.write(b"".join(buf))
                buf, size = [], 0
        load.stdin.write(b"".join(buf))
        load.stdin.close()
        output = load.stdout.read().decode()
        if load.wait(timeout=600) != 0 or "errors: 0" not in output:
            sys.exit(f"bench-memory: loading {name} into {kind} failed: {output.strip()}")
        held = cli(port, "DBSIZE") if check == "dbsize" else cli(port, check, key)
        if int(held) != count:
            sys.exit(f"bench-memory: {kind} holds {held} of {count} for {name}")
        after = settle(proc.pid)
        return (after - before) / count
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target/release/meridian"))
    args = parser.parse_args()
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        sys.exit("bench-memory: needs redis-server and redis-cli (apt-get install redis-server redis-tools)")
    if not os.path.exists(args.meridian):
        sys.exit(f"bench-memory: no meridian binary at {args.meridian} (cargo build --release)")
    only = [o.strip() for o in args.only.split(",") if o.strip()]
    workdir = tempfile.mkdtemp(prefix="bench-memory-")
    print(f"{'shape':<26} {'count':>9} {'unit':>8} {'redis B':>9} {'meridian B':>11} {'meridian/redis':>15}")
    try:
        for shape in shapes(args.scale):
            if only and not any(o in shape[0] for o in only):
                continue
            redis = measure("redis", args.meridian, workdir, shape)
            meridian = measure("meridian", args.meridian, workdir, shape)
            print(f"{shape[0]:<26} {shape[2]:>9} {shape[1]:>8} {redis:>9.1f} {meridian:>11.1f} {meridian / redis:>15.2f}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
