#!/usr/bin/env python3
"""The worst pause a command on a huge collection causes: Meridian against Debian's
redis-server, same machine, same run.

For each server (Meridian with `--shards 1`, so that every key shares the one shard)
and each case, load a key of `--members` elements, then run the command on one
connection while a probe connection sends `GET probe` one at a time and records each
round trip. Reported: the command's own time and the probe's worst round trip while
the command ran (how long the shard could answer nobody else), and the probe's median
when idle for scale.

usage: docker-benchmark/bench-pauses.py [--members 1000000] [--meridian BIN]
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import cli, resp, start_server


def start(kind, meridian_bin, workdir):
    return start_server(kind, workdir, meridian_bin)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 1000


def load(port, command, key, members):
    """`command key m...` in batches through redis-cli --pipe."""
    def stream():
        for start_at in range(0, members, BATCH):
            args = [command, key]
            for i in range(start_at, min(members, start_at + BATCH)):
                if command == b"ZADD":
                    args.append(b"%d" % i)
                if command == b"HSET":
                    args.append(b"field:%010d" % i)
                    args.append(b"v" * 16)
                else:
                    args.append(b"member:%09d" % i)
            yield resp(*args)
    out = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=b"".join(stream()), capture_output=True)
    if b"errors: 0" not in out.stdout:
        sys.exit(f"bench-pauses: load failed: {out.stdout.decode()}")


class Probe(threading.Thread):
    """GET probe, one at a time, recording (sent_at, round trip) until stopped."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.samples = []
        self.stopped = threading.Event()

    def run(self):
        request = resp(b"GET", b"probe")
        while not self.stopped.is_set():
            sent = time.perf_counter()
            self.sock.sendall(request)
            reply = b""
            while not reply.endswith(b"\r\n") or reply.startswith(b"$") and reply.count(b"\r\n") < 2:
                reply += self.sock.recv(4096)
            self.samples.append((sent, time.perf_counter() - sent))

    def worst_between(self, begin, end):
        inside = [rtt for sent, rtt in self.samples if sent + rtt >= begin and sent <= end]
        return max(inside) if inside else 0.0


def timed(port, probe, *command):
    """Run one command with redis-cli, output discarded; (its time, probe's worst)."""
    begin = time.perf_counter()
    subprocess.run(["redis-cli", "-p", str(port), *command], stdout=subprocess.DEVNULL, timeout=600)
    end = time.perf_counter()
    time.sleep(0.2)  # let a probe that was stuck behind the command come back
    return end - begin, probe.worst_between(begin, end + 0.2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target/release/meridian"))
    args = parser.parse_args()
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        sys.exit("bench-pauses: needs redis-server and redis-cli")
    workdir = tempfile.mkdtemp(prefix="bench-pauses-")
    cases = [
        ("SMEMBERS", b"SADD", b"bigset", ["SMEMBERS", "bigset"]),
        ("DEL set", b"SADD", b"bigset", ["DEL", "bigset"]),
        ("UNLINK set", b"SADD", b"bigset", ["UNLINK", "bigset"]),
        ("DEL hash", b"HSET", b"bighash", ["DEL", "bighash"]),
        ("DEL zset", b"ZADD", b"bigzset", ["DEL", "bigzset"]),
        ("UNLINK zset", b"ZADD", b"bigzset", ["UNLINK", "bigzset"]),
    ]
    print(f"{args.members} elements; load average {open('/proc/loadavg').read().split()[0]}")
    print(f"{'case':<12} {'server':<9} {'command ms':>11} {'worst probe ms':>15} {'idle probe ms':>14}")
    try:
        for name, loader, key, command in cases:
            for kind in ("redis", "meridian"):
                proc, port = start(kind, args.meridian, workdir)
                try:
                    cli(port, "SET", "probe", "x")
                    load(port, loader, key, args.members)
                    time.sleep(1.0)  # persistence and background work settle
                    probe = Probe(port)
                    probe.start()
                    time.sleep(0.5)
                    idle = statistics.median(rtt for _, rtt in probe.samples) if probe.samples else 0.0
                    took, worst = timed(port, probe, *command)
                    probe.stopped.set()
                    probe.join(timeout=10)
                    print(f"{name:<12} {kind:<9} {took * 1000:>11.1f} {worst * 1000:>15.1f} {idle * 1000:>14.2f}", flush=True)
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
