#!/usr/bin/env python3
"""Memory per idle client connection: Meridian against Debian's redis-server, same run.

For each server (fresh, persistence as `start_server` sets it), open N connections, send
one PING on each and read its reply, then leave them idle. Report the growth of INFO's
`used_memory` per connection half a second later (buffers as the last request left
them) and again after `--idle` seconds (both servers give back an idle client's buffers
after two), and RSS growth per connection at the end. Ratio = Meridian / Redis.

usage: docker-benchmark/bench-idle-connections.py [--connections N] [--idle S] [--meridian BIN]
Exits non-zero when a server fails to start or a connection is refused; the ratio
itself never fails the run.
"""

import argparse
import socket
import sys
import tempfile
import time

from benchlib import MERIDIAN_BIN, info_field, rss_bytes, start_server, stop


def measure(kind, connections, idle_s, meridian_bin, workdir):
    process, port = start_server(kind, workdir, meridian_bin)
    try:
        time.sleep(0.5)
        used0, rss0 = info_field(port, "memory", "used_memory"), rss_bytes(process.pid)
        sockets = []
        for _ in range(connections):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"PING\r\n")
            sockets.append(s)
        for s in sockets:
            if s.recv(16) != b"+PONG\r\n":
                sys.exit(f"{kind}: a connection did not answer PING")
        time.sleep(0.5)
        used_fresh = info_field(port, "memory", "used_memory")
        time.sleep(idle_s)
        used_idle, rss_idle = info_field(port, "memory", "used_memory"), rss_bytes(process.pid)
        for s in sockets:
            s.close()
        per = lambda after, before: (after - before) / connections
        return per(used_fresh, used0), per(used_idle, used0), per(rss_idle, rss0)
    finally:
        stop(process)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=3.0, help="seconds idle before the second reading")
    parser.add_argument("--meridian", default=MERIDIAN_BIN)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        redis = measure("redis", args.connections, args.idle, args.meridian, workdir)
        meridian = measure("meridian", args.connections, args.idle, args.meridian, workdir)
    print(f"{args.connections} connections, one PING each; bytes per connection (Meridian / Redis = ratio)")
    for label, at in (("used_memory, 0.5 s after the PING", 0), (f"used_memory, {args.idle + 0.5:g} s after", 1), ("RSS at the end", 2)):
        print(f"  {label:<36} {meridian[at]:>9.0f} / {redis[at]:>9.0f} = {meridian[at] / max(redis[at], 1):.2f}")


if __name__ == "__main__":
    main()
