#!/usr/bin/env python3
"""List and Pub/Sub throughput: Meridian against Debian's redis-server, same machine,
same core budget, same run (DESIGN §10, issue 15).

Each server is pinned to ONE core with taskset (Meridian with --shards 1);
redis-benchmark and the subscribers run on another core, so client and server never
share one. Rounds alternate redis, meridian, redis, meridian, ... and the median of each
(server, test) over the rounds is reported with the ratio meridian/redis. Only ratios
from one run mean anything: the machine's load (printed) moves absolute figures.

Measured:
- LPUSH, RPUSH, LPOP, RPOP, LRANGE_100 (`redis-benchmark -t`, one list `mylist`), at
  pipeline 16 and pipeline 1;
- PUBLISH to 1 and to 100 subscribers (`redis-benchmark ... PUBLISH`, pipeline 16 and
  1), the subscribers being plain sockets on the client core that read and discard.
  Every message must reach every subscriber: the script counts the bytes they read and
  fails the run if any is missing (a server that drops messages would post fine
  numbers otherwise).

usage: docker-benchmark/bench-lists-pubsub.py [--rounds 3] [--meridian BIN]
       [--requests-p16 1000000] [--requests-p1 200000] [--server-core 0] [--client-core 1]
       [--publish-only]
Exits non-zero when a server fails to start or a benchmark fails; a ratio below the
target never fails the run (targets: >= 1.0 for every row, issue 15).
"""

import argparse
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, resp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST_TESTS = ["LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE_100"]
PIPELINES = [16, 1]
SUBSCRIBERS = [1, 100]
CHANNEL = b"bench-channel"
PAYLOAD = b"x" * 16
CLIENTS = 50
START_TIMEOUT_S = 10
BENCH_TIMEOUT_S = 600
# How long subscribers may take to drain what is still in flight after the publisher
# is done, before missing messages count as lost.
DRAIN_TIMEOUT_S = 30


class Server:
    def __init__(self, name, argv, port):
        self.name, self.port = name, port
        self.log = tempfile.NamedTemporaryFile(prefix=f"bench-{name}-", suffix=".log", delete=False)
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + START_TIMEOUT_S
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"{name} exited during start-up (log: {self.log.name})")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(resp(b"PING"))
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        sys.exit(f"{name} did not answer PING within {START_TIMEOUT_S} s (log: {self.log.name})")

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def benchmark(server, client_core, pipeline, requests, args):
    """redis-benchmark's CSV rows as {test: rps}."""
    argv = ["taskset", "-c", str(client_core), "redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port),
            "-c", str(CLIENTS), "-n", str(requests), "-P", str(pipeline), "-q", "--csv"] + args
    done = subprocess.run(argv, capture_output=True, timeout=BENCH_TIMEOUT_S, text=True)
    if done.returncode != 0 or not server.alive():
        sys.exit(f"redis-benchmark against {server.name} failed ({done.returncode}): {done.stderr.strip()}")
    rows = {}
    for line in done.stdout.splitlines():
        cells = [c.strip().strip('"') for c in line.split(",")]
        if len(cells) >= 2 and cells[0].lower() != "test":
            try:
                rows[cells[0].upper()] = float(cells[1])
            except ValueError:
                pass
    return rows


def subscribe(port, count):
    """`count` subscribed sockets (non-blocking), once every SUBSCRIBE is confirmed."""
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(resp(b"SUBSCRIBE", CHANNEL))
        confirm = b""
        while confirm.count(b"\r\n") < 6:
            chunk = s.recv(4096)
            if not chunk:
                sys.exit("a subscriber was closed before its SUBSCRIBE was confirmed")
            confirm += chunk
        s.setblocking(False)
        sockets.append(s)
    return sockets


def message_bytes():
    return len(b"*3\r\n$7\r\nmessage\r\n") + len(b"$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL)) + len(b"$%d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD))


def publish(server, client_core, pipeline, requests, subscribers):
    """PUBLISH rps with `subscribers` reading; fails if a message went missing."""
    # The subscribers run in a child pinned to the client core, reading until they got
    # every byte (or the drain time passes).
    expected = requests * message_bytes()
    reader = subprocess.Popen(
        ["taskset", "-c", str(client_core), sys.executable, os.path.abspath(__file__), "--subscriber",
         str(server.port), str(subscribers), str(expected)],
        stdout=subprocess.PIPE, text=True)
    ready = reader.stdout.readline().strip()
    if ready != "ready":
        sys.exit(f"subscribers for {server.name} did not start: {ready!r}")
    rows = benchmark(server, client_core, pipeline, requests, ["PUBLISH", CHANNEL.decode(), PAYLOAD.decode()])
    out, _ = reader.communicate(timeout=DRAIN_TIMEOUT_S + 60)
    received = [int(n) for n in out.split()]
    short = [n for n in received if n != expected]
    if len(received) != subscribers or short:
        sys.exit(f"{server.name}: PUBLISH to {subscribers}: subscribers read {sorted(set(received))} bytes, expected {expected} each")
    # redis-benchmark names a custom command's row by the command line.
    rps = [v for k, v in rows.items() if k.startswith("PUBLISH ")]
    if len(rps) != 1:
        sys.exit(f"no PUBLISH figure from redis-benchmark against {server.name}: {sorted(rows)}")
    return rps[0]


def subscriber_main(port, count, expected):
    sockets = subscribe(port, count)
    selector = selectors.DefaultSelector()
    got = {}
    for s in sockets:
        selector.register(s, selectors.EVENT_READ)
        got[s] = 0
    print("ready", flush=True)
    buffer = bytearray(1 << 18)
    pending = set(sockets)
    last_progress = time.time()
    while pending and time.time() - last_progress < DRAIN_TIMEOUT_S:
        for key, _ in selector.select(timeout=1):
            s = key.fileobj
            try:
                n = s.recv_into(buffer)
            except BlockingIOError:
                continue
            if n == 0:
                selector.unregister(s)
                pending.discard(s)
                continue
            got[s] += n
            last_progress = time.time()
            if got[s] >= expected:
                selector.unregister(s)
                pending.discard(s)
    print(" ".join(str(got[s]) for s in sockets), flush=True)


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--subscriber":
        subscriber_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--meridian", default=os.path.join(ROOT, "target/release/meridian"))
    parser.add_argument("--requests-p16", type=int, default=1_000_000)
    parser.add_argument("--requests-p1", type=int, default=200_000)
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--client-core", type=int, default=1)
    parser.add_argument("--publish-only", action="store_true", help="only the PUBLISH rows (no list commands)")
    args = parser.parse_args()
    if args.rounds < 3:
        sys.exit("--rounds must be at least 3 (medians of fewer say little)")
    for requests, pipeline in ((args.requests_p16, 16), (args.requests_p1, 1)):
        # redis-benchmark sends whole pipelines from each client, so other counts send
        # more PUBLISHes than asked and the delivery check cannot be exact.
        if requests % (CLIENTS * pipeline) != 0:
            sys.exit(f"requests at P={pipeline} must be a multiple of {CLIENTS * pipeline} (clients x pipeline)")
    for tool in ("redis-server", "redis-benchmark", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (Debian: apt-get install redis-server redis-tools util-linux)")
    if not os.access(args.meridian, os.X_OK):
        sys.exit(f"{args.meridian} missing: cargo build --release -p meridian")
    requests = {16: args.requests_p16, 1: args.requests_p1}
    data = tempfile.mkdtemp(prefix="bench-lists-")
    pin = ["taskset", "-c", str(args.server_core)]
    redis_port, meridian_port = free_port(), free_port()
    servers = [
        Server("redis", pin + ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", data], redis_port),
        Server("meridian", pin + [args.meridian, "--shards", "1", "--port", str(meridian_port), "--data-dir",
                                  os.path.join(data, "meridian")], meridian_port),
    ]
    loads = [load_average()]
    results = {}  # (server, row) -> [rps]
    try:
        for round_ in range(1, args.rounds + 1):
            for server in servers:
                for pipeline in PIPELINES:
                    for subscribers in SUBSCRIBERS:
                        # Fewer publishes to 100 subscribers: each is 100 deliveries.
                        n = requests[pipeline] // (10 if subscribers > 1 else 1)
                        rps = publish(server, args.client_core, pipeline, n, subscribers)
                        results.setdefault((server.name, f"PUBLISH to {subscribers} P={pipeline}"), []).append(rps)
                    if not args.publish_only:
                        rows = benchmark(server, args.client_core, pipeline, requests[pipeline], ["-t", ",".join(t.lower() for t in LIST_TESTS)])
                        for test in LIST_TESTS:
                            # redis-benchmark names this row "LRANGE_100 (first 100 elements)".
                            name = "LRANGE_100 (FIRST 100 ELEMENTS)" if test == "LRANGE_100" else test
                            rps = rows.get(name)
                            if not rps:
                                sys.exit(f"no {test} figure from redis-benchmark against {server.name}: {sorted(rows)}")
                            results.setdefault((server.name, f"{test} P={pipeline}"), []).append(rps)
                    print(f"[bench] round {round_} {server.name} P={pipeline} done", file=sys.stderr, flush=True)
            loads.append(load_average())
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(data, ignore_errors=True)
    rows = [] if args.publish_only else [f"{t} P={p}" for p in PIPELINES for t in LIST_TESTS]
    rows += [f"PUBLISH to {s} P={p}" for p in PIPELINES for s in SUBSCRIBERS]
    print(f"\nMeridian vs Redis: one core each (core {args.server_core}), clients on core {args.client_core}, "
          f"{CLIENTS} clients, median of {args.rounds} alternating rounds; load average (1/5/15 min) "
          f"before and after each round: {' | '.join(loads)}\n")
    print(f"{'test':<22} {'redis rps':>12} {'meridian rps':>13} {'meridian/redis':>15}")
    for row in rows:
        redis = statistics.median(results[("redis", row)])
        meridian = statistics.median(results[("meridian", row)])
        print(f"{row:<22} {redis:>12.0f} {meridian:>13.0f} {meridian / redis:>15.2f}")


if __name__ == "__main__":
    main()
