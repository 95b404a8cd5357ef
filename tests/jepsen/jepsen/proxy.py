"""The delaying proxy every peer link goes through: its own process (run inside a node's
network namespace in netns mode, so that the packets it sends carry that node's
address and the nftables partitions apply to them).

    python3 proxy.py --control FILE --link SRC-DST:LISTEN_PORT:HOST:PORT ...

A link `i-j` carries the connections node i dials to node j. The control file (JSON,
re-read when it changes, polled every POLL_S) says per direction `a-b` (bytes from a
to b): `delay_ms` (each chunk is held that long, order kept) and `cut` (bytes are
dropped). Cutting a direction closes the link's connections at once, so no stream is
ever delivered with a hole in it; while a direction is cut, a new connection's bytes in
that direction are dropped from the first one, and the connection is closed when the
cut heals. Both directions cut: new connections are closed on accept. In loopback
mode these cuts are the partitions; in netns mode nftables does them and the proxy
only delays.
"""

import argparse
import asyncio
import json
import os

POLL_S = 0.1
CONNECT_TIMEOUT_S = 2.0
CHUNK_BYTES_MAX = 65536
# Chunks held per direction before the reader stops reading (TCP backpressure).
QUEUE_CHUNKS_MAX = 1024


class Control:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.delay_ms = {}
        self.cut = set()
        self.epoch = 0  # bumps whenever `cut` changes

    def reload(self):
        try:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime == self.mtime:
                return
            with open(self.path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return  # being rewritten: keep the last good settings
        self.mtime = mtime
        self.delay_ms = {k: int(v) for k, v in data.get("delay_ms", {}).items()}
        cut = set(data.get("cut", []))
        if cut != self.cut:
            self.cut = cut
            self.epoch += 1


class Link:
    def __init__(self, control, name, dst_host, dst_port):
        self.control = control
        self.up = name  # "i-j": bytes from i to j
        src, dst = name.split("-")
        self.down = f"{dst}-{src}"
        self.dst = (dst_host, dst_port)

    async def serve(self, reader, writer):
        ctl = self.control
        if self.up in ctl.cut and self.down in ctl.cut:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.dst), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            writer.close()
            return
        epoch = ctl.epoch
        pumps = [
            asyncio.create_task(self.pump(reader, up_writer, self.up)),
            asyncio.create_task(self.pump(up_reader, writer, self.down)),
        ]
        try:
            while not any(p.done() for p in pumps):  # either side gone: close both
                if ctl.epoch != epoch:
                    break  # a cut began or healed: this stream ends here
                await asyncio.sleep(POLL_S)
        finally:
            for p in pumps:
                p.cancel()
            for w in (writer, up_writer):
                w.close()

    async def pump(self, reader, writer, direction):
        """Copy bytes one way, each chunk held for the direction's delay; dropped while
        the direction is cut."""
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue(QUEUE_CHUNKS_MAX)

        async def deliver():
            while True:
                due, chunk = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        try:
            while True:
                chunk = await reader.read(CHUNK_BYTES_MAX)
                if not chunk or sender.done():
                    return
                if direction in self.control.cut:
                    continue
                delay_s = self.control.delay_ms.get(direction, 0) / 1000.0
                await queue.put((loop.time() + delay_s, chunk))
        finally:
            sender.cancel()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--control", required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--link", action="append", default=[])
    args = parser.parse_args()
    control = Control(args.control)
    control.reload()
    for spec in args.link:
        name, listen_port, host, port = spec.split(":")
        link = Link(control, name, host, int(port))
        await asyncio.start_server(link.serve, args.bind, int(listen_port))
    print("proxy ready", flush=True)
    while True:
        control.reload()
        await asyncio.sleep(POLL_S)


if __name__ == "__main__":
    asyncio.run(main())
